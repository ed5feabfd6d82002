/**
 * Found in review: cc0f8b0 confirms a settling write whose answer was lost by reading the claim, "and
 * still tells the waiters", but only when a LATER try of the write reaches Postgres within
 * `recordRetryMs`. When the first try committed and its answer was lost to an outage that outlasts
 * `recordRetryMs` (a failover: the old primary committed, the connection dropped, the new one takes
 * a while), `write()` gives up with `undefined`:
 *
 * - the worker logs "could not release the claim; the claim stays without an outcome and later
 *   attempts will be refused", which is false: the claim is gone;
 * - the workflows refused on the key are never told, though the store noted the token for
 *   `waitersToTell` (cc0f8b0) and Postgres is back a moment later: nobody ever asks again;
 * - the engineer's `resume KEY` is refused (no claim, no release on the operator trail: "deleted
 *   outside the CLI, or pruned … Check the vendor"), for a call that failed definitely.
 *
 * The refused workflow waits in `resumable()` for ever. Real Postgres, real Temporal; as in waiters-told-after-a-late-record.test.ts
 * late-release test, the owner pauses past its lease (renewals withheld) within its start-to-close,
 * and two workflows share one custom key. The outage is simulated at the store's `release`: its
 * first try commits and then reports a dropped connection; every try in the next 3 s fails to connect.
 */
import { describe, expect, inject, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import { idempotencyInterceptors } from '../../src/index.js';
import type { Claim, ClaimStore, HeldClaim } from '../../src/index.js';
import { within } from '../support/partitions.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { waitingOn } from '../support/pending-refusal.js';
import { runCli } from '../support/cli.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const cli = (...args: string[]) => runCli([...args, '--schema', schema.name], { TEMPORAL_ADDRESS: inject('temporalAddress') });


async function ownTokenOf(workflowId: string): Promise<string> {
  const { rows } = await schema.pool.query<{ token: string }>(`SELECT token FROM "${schema.name}".claims WHERE workflow_id = $1`, [workflowId]);
  return rows[0]!.token;
}

describe('a paused owner whose late release commits but whose answer is lost to a short outage', () => {
  it('still tells the workflow refused on the key once Postgres is back: not left waiting for ever', async () => {
    const taskQueue = uniqueName('tq');
    const ref = uniqueName('order');
    const paused = new Set<string>();
    let outageUntil = 0;
    let releaseTries = 0;
    const store: ClaimStore = Object.assign(Object.create(schema.store) as ClaimStore, {
      renewLeases: (claims: readonly HeldClaim[], leaseMs: number) => schema.store.renewLeases(claims.filter((claim) => !paused.has(claim.token)), leaseMs),
      release: async (claim: Claim) => {
        releaseTries++;
        if (!paused.has(claim.token)) return schema.store.release(claim);
        if (releaseTries === 1) {
          await schema.store.release(claim); // committed on the server…
          outageUntil = Date.now() + 3_000;
          throw new Error('Connection terminated unexpectedly'); // …and the answer lost
        }
        if (Date.now() < outageUntil) throw Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:5432'), { code: 'ECONNREFUSED', syscall: 'connect' });
        return schema.store.release(claim);
      },
    });
    let wake: (() => void) | undefined;
    let bodies = 0;
    const activities = {
      placeCall: async (_call: { ref: string }) => {
        bodies++;
        if (bodies === 1) {
          paused.add(await ownTokenOf(Context.current().info.workflowExecution!.workflowId)); // a long pause: the lease lapses
          await new Promise<void>((resolve) => (wake = resolve));
          throw new Error('vendor said 400: nothing was placed'); // definite: the claim is released
        }
        return { id: 'placed_once' };
      },
    };
    const interceptors = {
      activity: idempotencyInterceptors({ store, leaseMs: 1_500, recordRetryMs: 1_500, activities: { placeCall: { key: ({ args }) => args[0].ref } } }),
    };
    const outcome = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      const owner = await temporal.client.workflow.start('callActivity', {
        taskQueue,
        workflowId: uniqueName('wf-owner'),
        args: [{ activity: 'placeCall', args: [{ ref }], startToCloseTimeoutMs: 60_000, maximumAttempts: 1 }],
      });
      for (let i = 0; i < 100 && wake === undefined; i++) await sleep(50);
      await sleep(2_000); // past the owner's 1.5 s lease
      const waiter = await temporal.client.workflow.start('resumableCallActivity', {
        taskQueue,
        workflowId: uniqueName('wf-waiter'),
        args: [{ activity: 'placeCall', args: [{ ref }] }],
      });
      const pending = await waitingOn(waiter); // refused: the owner's lease lapsed
      wake!(); // the owner's call fails definitely; its release commits, its answer is lost, Postgres is back in 3 s
      await owner.result().catch(() => undefined);
      const claimsLeft = (await schema.pool.query(`SELECT 1 FROM "${schema.name}".claims`)).rowCount;
      const result = await within(waiter.result(), 15_000, 'the workflow is still waiting in resumable() for a decision nobody will send').catch(
        async (error: Error) => {
          const resumed = await cli('resume', pending.key);
          await waiter.terminate('test cleanup');
          return { stranded: error.message, claimsLeft, resumeExitCode: resumed.code, resumeSays: resumed.stderr.trim().split('\n').slice(-2).join(' ') };
        },
      );
      return { result };
    });
    // Before a fix: { stranded: '… still waiting …', claimsLeft: 0, resumeExitCode: 3, resumeSays: '… no release of it is on the
    // operator trail: the row was deleted outside the CLI, or pruned …' }; the worker logged "the claim stays without an outcome".
    expect(outcome, JSON.stringify(outcome)).toEqual({ result: [{ id: 'placed_once' }] });
    expect(bodies).toBe(2);
  });
});
