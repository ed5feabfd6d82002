/**
 * Found in review: 4f93401 keeps one ghost listener per store and tells the workflows refused on an undone
 * ghost through "the latest activity of any worker on it". 8368674 already named the case this
 * leaves: a process whose workers on one store serve more than one namespace (one pg pool and one store
 * per process, a Worker per tenant namespace). Every worker is alive and connected; the latest activity
 * is merely another namespace's, so `tellWaitersOfOutcome` finds the refused workflow "in other
 * namespaces than …", logs a line for the operator, and nobody signals it: the workflow refused on the
 * ghost waits in `resumable()` for ever, though nothing ran and the store knows it.
 *
 * Real Postgres, real Temporal (a second namespace registered on the dev server).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { NativeConnection, Worker } from '@temporalio/worker';
import { Client } from '@temporalio/client';
import { describe, expect, inject, it } from 'vitest';
import { PostgresClaimStore, idempotencyInterceptors } from '../../src/index.js';
import { partitionedPool, within } from '../support/partitions.js';
import { useTestSchema } from '../support/schema.js';
import { pendingActivityFailure, uniqueName, useTemporal } from '../support/temporal.js';
import { waitingOn } from '../support/pending-refusal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();



describe('a ghost undone by a store that workers of two namespaces share', () => {
  it('tells the refused workflow, though the latest activity on the store was the other namespace\'s', async () => {
    const partition = partitionedPool(schema.pool);
    const storeA = new PostgresClaimStore({ pool: partition.pool, schema: schema.name });
    const activities = {
      chargeCard: async () => ({ id: 'ch_once' }),
      ping: async () => 'pong',
    };
    // A second tenant namespace, served by a worker of the same process on the same store.
    const otherNamespace = uniqueName('ns');
    await temporal.client.workflowService.registerNamespace({
      namespace: otherNamespace,
      // protobufjs takes a number for an int64 at run time; its type asks for a Long.
      workflowExecutionRetentionPeriod: { seconds: 86_400 as never },
    });
    const otherConnection = await NativeConnection.connect({ address: inject('temporalAddress') });
    const otherClient = new Client({ connection: temporal.client.connection, namespace: otherNamespace });

    const taskQueue = uniqueName('tq');
    const workflowId = uniqueName('wf');
    partition.arm();
    const handle = await temporal.withWorker(
      { taskQueue, activities, interceptors: { activity: idempotencyInterceptors({ store: storeA, leaseMs: 8_000, activities: { ping: false } }) } },
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

    const otherQueue = uniqueName('tq-other');
    const other = await Worker.create({
      connection: otherConnection,
      namespace: otherNamespace,
      taskQueue: otherQueue,
      workflowBundle: temporal.workflowBundle,
      activities,
      interceptors: { activity: idempotencyInterceptors({ store: storeA, activities: { ping: false } }) },
    });
    const otherRunning = other.run();
    try {
      const outcome = await temporal.withWorker(
        { taskQueue, activities, interceptors: { activity: idempotencyInterceptors({ store: schema.store }) } },
        async () => {
          await within(waitingOn(handle).catch(() => waitingOn(handle)), 40_000, 'never refused');
          // The other tenant's worker, alive all along, runs an activity (a read) on the shared store.
          for (let i = 0; ; i++) {
            try {
              await otherClient.workflow.execute('callActivity', { taskQueue: otherQueue, workflowId: uniqueName('wf-ping'), args: [{ activity: 'ping', args: [] }] });
              break;
            } catch (error) {
              if (i > 60) throw error; // the new namespace takes a moment to be known
              await sleep(500);
            }
          }
          partition.heal(); // storeA reaches Postgres again: its undo deletes the ghost, and its listener is told
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
      // Before a fix: { stranded: '… still waiting …', claimsLeft: 0, waiters: [{ signalled_at: null }] }: the store's one
      // listener told through the other namespace's activity, found the waiter "in other namespaces", and logged it.
      expect(outcome, JSON.stringify(outcome)).toEqual([{ id: 'ch_once' }]);
    } finally {
      other.shutdown();
      await otherRunning;
      await otherConnection.close();
      await storeA.close();
    }
  });
});
