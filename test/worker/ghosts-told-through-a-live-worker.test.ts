/**
 * Found in review: 0149167 tells the workflows refused on a ghost claim once the store undoes it, through
 * `latestActivity`'s client: each `idempotencyInterceptors()` call adds a listener to the store
 * (`onGhostReleased`) and never removes it, and each listener keeps the context of the last activity
 * its worker ran, after that worker shut down.
 *
 * A process that creates a Worker more than once on one store (a supervisor that re-creates its
 * Worker, with a fresh NativeConnection, after the old one failed or was drained; one pg pool and one
 * store for the process's lifetime) accumulates listeners. When a ghost is undone, every listener
 * runs `tellWaitersOfOutcome`, and `waitersToTell` hands the waiters to the FIRST only (it consumes
 * the token): the oldest listener, whose worker is gone and whose connection is closed. Its signal
 * fails, the waiter is left "for the operator" in a log line, and the worker that could tell it gets
 * nothing to tell. The refused workflow waits in `resumable()` for ever: the defect 8f9b0bc fixed, again.
 * (The same happens when the first listener's worker is alive but in another namespace: "workflows
 * wait on it in other namespaces than …".)
 *
 * Real Postgres, real Temporal. As waiters-told-when-a-ghost-is-undone.test.ts, with one earlier Worker on
 * the same store, on a connection closed when it was replaced.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { NativeConnection, Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';
import { PostgresClaimStore, idempotencyInterceptors } from '../../src/index.js';
import { partitionedPool, within } from '../support/partitions.js';
import { useTestSchema } from '../support/schema.js';
import { pendingActivityFailure, uniqueName, useTemporal } from '../support/temporal.js';
import { waitingOn } from '../support/pending-refusal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();



describe('a ghost undone by a store that more than one Worker of the process used', () => {
  it('tells the refused workflow through a worker that can, not through the first, long gone', async () => {
    const partition = partitionedPool(schema.pool);
    const storeA = new PostgresClaimStore({ pool: partition.pool, schema: schema.name });
    const activities = {
      chargeCard: async () => ({ id: 'ch_once' }),
      ping: async () => 'pong',
    };

    // The process's first Worker on storeA ran an activity, then was replaced: drained, its connection closed.
    const firstConnection = await NativeConnection.connect({ address: inject('temporalAddress') });
    const firstQueue = uniqueName('tq-first');
    const first = await Worker.create({
      connection: firstConnection,
      taskQueue: firstQueue,
      workflowBundle: temporal.workflowBundle,
      activities,
      interceptors: { activity: idempotencyInterceptors({ store: storeA, activities: { ping: false } }) },
    });
    await first.runUntil(
      temporal.client.workflow.execute('callActivity', { taskQueue: firstQueue, workflowId: uniqueName('wf-ping'), args: [{ activity: 'ping', args: [] }] }),
    );
    await firstConnection.close();

    // Its replacement, on the same store: attempt 1's claim commits unanswered (a ghost), then storeA is cut off.
    const taskQueue = uniqueName('tq');
    const workflowId = uniqueName('wf');
    partition.arm();
    const handle = await temporal.withWorker(
      { taskQueue, activities, interceptors: { activity: idempotencyInterceptors({ store: storeA, leaseMs: 8_000 }) } },
      async () => {
        const started = await temporal.client.workflow.start('resumableCallActivity', {
          taskQueue,
          workflowId,
          args: [{ activity: 'chargeCard', args: [{ amountCents: 900 }], maximumAttempts: 50 }],
        });
        await pendingActivityFailure(started, (failure) => failure.type === 'IdempotencyStoreUnavailable');
        return started;
      },
    );
    expect(partition.lost()).toBe(true);

    const outcome = await temporal.withWorker(
      { taskQueue, activities, interceptors: { activity: idempotencyInterceptors({ store: schema.store }) } },
      async () => {
        // The retry on another worker waits out the ghost's 8 s lease and is refused as orphaned; the workflow waits.
        await within(waitingOn(handle).catch(() => waitingOn(handle)), 40_000, 'never refused');
        partition.heal(); // storeA reaches Postgres again: its undo deletes the ghost, and its listeners are told
        for (let i = 0; i < 50; i++) {
          if ((await schema.pool.query(`SELECT 1 FROM "${schema.name}".claims`)).rowCount === 0) break;
          await sleep(200);
        }
        const claimsLeft = (await schema.pool.query(`SELECT 1 FROM "${schema.name}".claims`)).rowCount;
        return within(handle.result(), 15_000, 'the workflow is still waiting in resumable() for a decision nobody will send').catch(
          async (error: Error) => {
            const waiters = (await schema.pool.query(`SELECT signalled_at FROM "${schema.name}".waiters`)).rows;
            await handle.terminate('test cleanup');
            return { stranded: error.message, claimsLeft, waiters };
          },
        );
      },
    );
    await storeA.close();
    // Before a fix: { stranded: '… still waiting …', claimsLeft: 0, waiters: [{ signalled_at: null }] }: the first Worker's
    // listener took the waiters and signalled through its closed connection; the log says to run release-absent by hand.
    expect(outcome, JSON.stringify(outcome)).toEqual([{ id: 'ch_once' }]);
  });
});
