/**
 * Found in review: the store's undo of a ghost claim (ClaimUndo: an INSERT that committed though its caller
 * was told it failed, so nothing ever ran under it) deletes the row and tells nobody. A workflow that
 * was refused on the ghost meanwhile waits in `resumable()` for ever.
 *
 * cc0f8b0 taught an owner that releases its claim late to tell the workflows refused on the key
 * ('released': nothing happened, call again). The ghost's undo is the same settlement (nothing
 * happened, the claim goes), but `undoClaims` was a bare DELETE: no `waitersToTell`, no
 * operator trail. And a ghost is exactly what other workers refuse: its owner never renews its
 * lease (its caller gave up), so once the lease lapses any other worker finds a `claimed` row with a
 * dead owner and refuses it as orphaned. When the undoing worker was cut off from Postgres for
 * longer than the lease (but less than the undo's 2 × lease), the order is: refused, then undone.
 *
 * The engineer's `resume KEY` is refused too ("deleted outside the CLI, or pruned … Check the
 * vendor"), for a call that never left the process.
 *
 * Real Postgres, real Temporal. Worker A's pool loses the answer of its claim INSERT (it committed)
 * and then cannot reach Postgres (a partition) until the test ends it; worker A stops; the retry
 * runs on worker B (another store), is refused on the ghost once its lease lapses; then A's
 * partition heals and its undo deletes the ghost.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, inject, it } from 'vitest';
import { PostgresClaimStore, idempotencyInterceptors } from '../../src/index.js';
import { partitionedPool, within } from '../support/partitions.js';
import { useTestSchema } from '../support/schema.js';
import { pendingActivityFailure, uniqueName, useTemporal } from '../support/temporal.js';
import { waitingOn } from '../support/pending-refusal.js';
import { runCli } from '../support/cli.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const cli = (...args: string[]) => runCli([...args, '--schema', schema.name], { TEMPORAL_ADDRESS: inject('temporalAddress') });



describe('a ghost claim (its insert committed, its caller told it failed) that another worker refused on', () => {
  it('once undone, tells the refused workflow that the key is free: not left waiting for ever', async () => {
    const taskQueue = uniqueName('tq');
    let bodies = 0;
    const activities = {
      chargeCard: async () => {
        bodies++;
        return { id: 'ch_once' };
      },
    };
    const partition = partitionedPool(schema.pool, { armed: true });
    const storeA = new PostgresClaimStore({ pool: partition.pool, schema: schema.name });
    const workflowId = uniqueName('wf');
    const handle = await temporal.withWorker(
      { taskQueue, activities, interceptors: { activity: idempotencyInterceptors({ store: storeA, leaseMs: 8_000 }) } },
      async () => {
        const started = await temporal.client.workflow.start('resumableCallActivity', {
          taskQueue,
          workflowId,
          args: [{ activity: 'chargeCard', args: [{ amountCents: 900 }], maximumAttempts: 50 }],
        });
        // Attempt 1 on A: its claim committed, A was told the store is unavailable (retryable). A stops.
        await pendingActivityFailure(started, (failure) => failure.type === 'IdempotencyStoreUnavailable');
        return started;
      },
    );
    expect(partition.lost()).toBe(true);
    const ghost = (await schema.pool.query<{ state: string }>(`SELECT state FROM "${schema.name}".claims`)).rows;
    expect(ghost).toEqual([{ state: 'claimed' }]);

    const outcome = await temporal.withWorker(
      { taskQueue, activities, interceptors: { activity: idempotencyInterceptors({ store: schema.store }) } },
      async () => {
        // The retry on B waits out the ghost's 8 s lease, then is refused as orphaned; the workflow waits.
        const pending = await within(waitingOn(handle).catch(() => waitingOn(handle)), 40_000, 'never refused');
        partition.heal(); // A reaches Postgres again: its undo deletes the ghost within a second
        for (let i = 0; i < 50; i++) {
          if ((await schema.pool.query(`SELECT 1 FROM "${schema.name}".claims`)).rowCount === 0) break;
          await sleep(200);
        }
        const claimsLeft = (await schema.pool.query(`SELECT 1 FROM "${schema.name}".claims`)).rowCount;
        return within(handle.result(), 15_000, 'the workflow is still waiting in resumable() for a decision nobody will send').catch(
          async (error: Error) => {
            const resumed = await cli('resume', pending.key);
            await handle.terminate('test cleanup');
            return { stranded: error.message, claimsLeft, resumeExitCode: resumed.code, resumeSays: resumed.stderr.trim().split('\n').slice(-1)[0] };
          },
        );
      },
    );
    await storeA.close();
    // Before a fix: { stranded: '… still waiting …', claimsLeft: 0 (the ghost was undone), resumeExitCode: 3, resumeSays: 'No claim for
    // key … and no release of it is on the operator trail: the row was deleted outside the CLI, or pruned … Check the vendor …' }.
    expect(outcome, JSON.stringify(outcome)).toEqual([{ id: 'ch_once' }]);
    expect(bodies).toBe(1);
  });
});
