/**
 * Found in review: `resume` turns a deletion nobody made through the CLI into an operator's
 * "released" decision, and leaves no operator trail.
 *
 * SECURITY.md: a role that can delete claim rows can make the next attempt run again; "the ledger
 * still shows the call went out". A workflow waiting in resumable() on an `unknown` key does not
 * call again by itself: it waits for a decision. A DB writer deletes the row; the operator, seeing
 * the workflow still waiting (its pending query, the Web UI), runs `resume KEY` as the runbook
 * says for a lost signal. `resume` finds no row, reports `decision: released` (nobody released it:
 * the operator trail has no release), signals the workflow, and the call goes out a second time.
 * No operator_actions row records the resume either.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, inject, it } from 'vitest';
import { OutcomeUnknownError, PostgresClaimStore, idempotencyInterceptors } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { runCli } from '../support/cli.js';
import { waitingOn } from '../support/pending-refusal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const SECRET = 'test-deployment-secret-of-at-least-32-bytes!';

describe('resume after a deletion the CLI did not make', () => {
  it('does not report "released", and the call does not go out again', async () => {
    let bodies = 0;
    const activities = {
      placeCall: async () => {
        bodies++;
        if (bodies === 1) throw new OutcomeUnknownError('the line dropped after the vendor placed the call');
        return { id: 'placed_a_second_time' };
      },
    };
    const taskQueue = uniqueName('tq');
    const store = new PostgresClaimStore({ pool: schema.pool, schema: schema.name, secret: SECRET });
    const outcome = await temporal.withWorker({ taskQueue, activities, interceptors: { activity: idempotencyInterceptors({ store }) } }, async () => {
      const handle = await temporal.client.workflow.start('resumableCallActivity', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'placeCall', args: [{ to: '+4930123', message: 'hello' }] }],
      });
      const { key } = await waitingOn(handle);

      // A DB writer without the secret deletes the claim row.
      await schema.pool.query(`DELETE FROM "${schema.name}".claims WHERE key = $1`, [key]);

      // The operator sees the workflow still waiting and runs `resume`, as for a lost signal.
      const resumed = await runCli(['resume', key, '--schema', schema.name, '--json'], {
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TEMPORAL_IDEMPOTENCY_SECRET: SECRET,
      });
      const result = await Promise.race([handle.result(), sleep(8_000).then(() => 'still waiting' as const)]);
      const trail = await schema.pool.query(`SELECT action FROM "${schema.name}".operator_actions WHERE key = $1`, [key]);
      return { resumeExit: resumed.code, resumeOutput: resumed.stdout, result, trail: trail.rows };
    });
    // Fails today: resume exits 0 with decision "released", the call goes out a second time
    // (bodies 2, result placed_a_second_time), and the operator trail is empty.
    expect({ bodies, resumeSaysReleased: outcome.resumeOutput.includes('released') }, JSON.stringify(outcome)).toEqual({
      bodies: 1,
      resumeSaysReleased: false,
    });
  });
});
