/**
 * Found in review: `prune` deletes the resolved record a waiting workflow still depends on.
 *
 * The operator resolves a refused key ("it happened"), but the signal to the waiting
 * workflow fails (Temporal unreachable: exit 6, "signal it yourself"). The workflow keeps
 * waiting in resumable(). Later `prune` (a routine cron job) deletes completed claims past
 * its horizon; it never asks whether a workflow still waits on one. Then:
 * - `resume KEY` reports `decision: released` for a key the operator resolved, and
 *   signals nobody (exit 0);
 * - the hand signal the failed `resolve` printed (`{"key":…,"decision":"resolved"}`)
 *   makes the workflow call again with the refused key, finds no record, and the
 *   activity runs a second time: a doubled call.
 *
 * The horizon is one second here (with --force) only to keep the test short; a
 * workflow waiting 8 days on a lost signal under `prune --older-than 7d` is the same.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, inject, it } from 'vitest';
import { WorkflowNotFoundError } from '@temporalio/client';
import { OutcomeUnknownError, idempotencyInterceptors } from '../../src/index.js';
import { OPERATOR_DECISION_SIGNAL } from '../../src/operator-decision.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { runCli } from '../support/cli.js';
import { waitingOn } from '../support/pending-refusal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const cli = (env: Record<string, string>, ...args: string[]) => runCli([...args, '--schema', schema.name], env);
const reachable = { TEMPORAL_ADDRESS: inject('temporalAddress') };
const unreachable = { TEMPORAL_ADDRESS: '127.0.0.1:1' };

describe('prune and a workflow still waiting on a resolved key', () => {
  it('never lets the resolved call run again', async () => {
    const taskQueue = uniqueName('tq');
    let bodies = 0;
    const activities = {
      placeCall: async () => {
        bodies++;
        if (bodies === 1) throw new OutcomeUnknownError('the line dropped after the vendor placed the call');
        return { id: 'placed_a_second_time' };
      },
    };
    const interceptors = { activity: idempotencyInterceptors({ store: schema.store }) };
    const { result, resumed } = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      const handle = await temporal.client.workflow.start('resumableCallActivity', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'placeCall', args: [{ to: '+4930123', message: 'hello' }] }],
      });
      const { key } = await waitingOn(handle);

      // It happened: the operator resolves it, but the signal cannot get through.
      const resolved = await cli(unreachable, 'resolve', key, '--result', '{"id":"call_1"}');
      expect(resolved.code).toBe(6);
      expect(resolved.stderr).toContain('signal it yourself');

      // Routine retention job.
      await sleep(1_500);
      expect((await cli(reachable, 'prune', '--older-than', '1s', '--force')).code).toBe(0);

      // The operator follows the runbook: `resume`, then the hand signal the failed resolve printed.
      const resumed = await cli(reachable, 'resume', key, '--json');
      // resume may have told the workflow already, and it may have finished: then the hand signal finds nothing to tell.
      await handle.signal(OPERATOR_DECISION_SIGNAL, { key, decision: 'resolved' }).catch((error: unknown) => {
        if (!(error instanceof WorkflowNotFoundError)) throw error;
      });
      const result = await Promise.race([handle.result(), sleep(10_000).then(() => 'still waiting' as const)]);
      return { result, resumed };
    });
    // Fails today: the activity ran a second time, and the workflow got the second call's receipt.
    expect({ bodies, result }).toEqual({ bodies: 1, result: [{ id: 'call_1' }] });
    // Fails today too: resume says "released" for a key the operator resolved.
    expect(resumed.stdout).not.toContain('released');
  });
});
