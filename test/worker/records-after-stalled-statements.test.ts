/**
 * Found in review, end to end on a real Temporal server: records stuck on half-open connections (a
 * failover) wedge every later record of the worker, so a call that went out and returned, on a
 * network that works again, never gets its result recorded nor returned to Temporal, and its
 * workflow ends in a non-retryable IdempotencyOrphanedClaim instead of the receipt.
 *
 * The records NaturalBatch sent its next statement only when one of those in flight settled,
 * and a record has no statement timeout. The later call's `complete` queued behind the stuck
 * statements forever; the lease keeper (bounded, on fresh connections) keeps its claim alive;
 * Temporal times the attempt out; every retry waits on that live owner, and once the owner is past
 * its deadline the retry is refused as orphaned: a person must now resolve a charge that was
 * recorded nowhere. Before 3156d7e the later record went out on a fresh connection at once.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { STATEMENTS_IN_FLIGHT } from '../../src/store/postgres-claim-store.js';
import { PostgresClaimStore, idempotencyInterceptors } from '../../src/index.js';
import type { StoreLogger } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { poolThroughProxy } from '../support/tcp-proxy.js';
import { applicationFailureIn } from '../../dev/failures.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});
const quiet: StoreLogger = { warn: () => undefined, error: () => undefined };

describe('a call that went out after every record in flight was stranded on a half-open connection', () => {
  it('returns its receipt to the workflow, once', { timeout: 150_000 }, async () => {
    const { proxy, pool } = await poolThroughProxy(cleanups, 10);
    const store = new PostgresClaimStore({ pool, schema: schema.name, logger: quiet });

    const calls = new Map<string, number>();
    let entered = 0;
    let bothEntered: () => void = () => undefined;
    const barrier = new Promise<void>((resolve) => (bothEntered = resolve));
    const activities = {
      charge: async (order: string) => {
        calls.set(order, (calls.get(order) ?? 0) + 1);
        if (order.startsWith('stranded')) {
          if (++entered === STATEMENTS_IN_FLIGHT) bothEntered();
          await barrier;
          // The failover happens as these calls return: their records go out on connections
          // that carry nothing; a moment later the network works again for new connections.
          proxy.stall();
          setTimeout(() => proxy.flow(), 500);
        }
        return `receipt-${order}`;
      },
    };
    const interceptors = { activity: idempotencyInterceptors({ store }) };
    const taskQueue = uniqueName('tq');
    const run = (order: string) =>
      temporal.client.workflow.start('callActivity', {
        taskQueue,
        workflowId: uniqueName(`wf-${order}`),
        args: [{ activity: 'charge', args: [order], startToCloseTimeoutMs: 3_000, maximumAttempts: 40 }],
      });

    const outcome = await temporal.withWorker({ taskQueue, activities, interceptors, shutdownGraceTime: '1s' }, async () => {
      // A busy worker: some idle connections in its pool.
      const warm = () => Promise.all(Array.from({ length: STATEMENTS_IN_FLIGHT + 1 }, () => pool.query('SELECT pg_sleep(0.05)')));
      await warm();
      expect(await (await run('warm-up')).result()).toEqual(['receipt-warm-up']);
      await warm();

      const stranded = await Promise.all(Array.from({ length: STATEMENTS_IN_FLIGHT }, (_, index) => run(`stranded-${index + 1}`)));
      await barrier;
      await sleep(1_500); // stalled, then flowing again
      expect((await Promise.race([pool.query('SELECT 1'), sleep(5_000).then(() => 'hung')])) !== 'hung').toBe(true);

      const later = await run('after-recovery');
      const settled = await Promise.race([
        later.result().then(
          (value) => ({ returned: value }),
          (error: unknown) => ({ refused: applicationFailureIn(error)?.type ?? 'other failure' }),
        ),
        sleep(70_000).then(() => ({ still: 'waiting' as const })),
      ]);
      // Let the stuck statements fail, so every activity can finish and the worker can stop.
      proxy.dropConnections();
      for (const handle of [...stranded, later]) await handle.terminate('test over').catch(() => undefined);
      return settled;
    });

    expect(calls.get('after-recovery')).toBe(1);
    expect(outcome).toEqual({ returned: ['receipt-after-recovery'] });
  });
});
