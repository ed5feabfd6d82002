/**
 * Found in review of ae02022 (waiters poll `store.get` every `min(1 s, leaseMs / 4)`): a waiting
 * attempt's read of the claim goes out on a pooled connection, and after a failover that connection
 * can be half-open: the read gets no answer and no error until TCP gives up (minutes). The wait
 * awaited each read without a bound, so the attempt waited past `maxWaitMs` and past its own
 * start-to-close timeout, heartbeating all along (so Temporal's heartbeat timeout never caught it),
 * and a cancellation did not end it either. The lease renewal is bounded for exactly this case.
 *
 * Real Postgres behind a proxy that stalls (bytes dropped, sockets kept open); the owner's store is
 * on a direct pool, the waiter's on the stalled one. No Temporal server: the attempts run in
 * MockActivityEnvironments under the interceptors.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import type { ApplicationFailure } from '@temporalio/common';
import { IdempotencyClaimBusy, PostgresClaimStore } from '../../src/index.js';
import type { StoreLogger } from '../../src/index.js';
import { IdempotentActivityEnvironment } from '../../src/testing/index.js';
import { useTestSchema } from '../support/schema.js';
import { poolThroughProxy } from '../support/tcp-proxy.js';
import { callInFlight } from '../support/unit-attempts.js';

const schema = useTestSchema(import.meta.filename);
const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});
const quiet: StoreLogger = { warn: () => undefined, error: () => undefined };
const info = { workflowExecution: { workflowId: 'order-half-open', runId: 'run-1' }, startToCloseTimeoutMs: 60_000 };

describe('an attempt waiting for a live owner, when its read goes out on a half-open connection', () => {
  it('ends retryably at maxWaitMs instead of waiting on the read', { timeout: 60_000 }, async () => {
    const { proxy, pool: stalledPool } = await poolThroughProxy(cleanups, 4);

    const ownerStore = new PostgresClaimStore({ pool: schema.pool, schema: schema.name, logger: quiet });
    const waiterStore = new PostgresClaimStore({ pool: stalledPool, schema: schema.name, logger: quiet });
    const owners = new IdempotentActivityEnvironment({ store: ownerStore, info });
    const waiters = new IdempotentActivityEnvironment({ store: waiterStore, info, maxWaitMs: 3_000 });

    const first = callInFlight<string>();
    let calls = 0;
    const transfer = async (_amount: number) => {
      calls++;
      return first.body();
    };
    const owner = owners.attempt({ activityType: 'transfer', attempt: 1 }).run(transfer, 100);
    await expect.poll(first.started).toBe(true);

    const waiter = waiters.attempt({ activityType: 'transfer', attempt: 2 });
    let heartbeats = 0;
    waiter.on('heartbeat', () => heartbeats++);
    const started = Date.now();
    const waiting = waiter.run(transfer, 100).then(
      () => 'answered',
      (error: ApplicationFailure) => error,
    );
    await expect.poll(() => heartbeats, { timeout: 10_000 }).toBeGreaterThan(0);

    // The failover: the waiter's connections stay open and carry nothing.
    proxy.stall();

    const ended = await Promise.race([waiting, sleep(15_000).then(() => 'still waiting' as const)]);
    const waitedMs = Date.now() - started;
    const beatsAtEnd = heartbeats;
    // Unstick whatever still waits: the proxy's sockets close, the read fails.
    await proxy.stop();
    await waiting;

    expect(ended, `still waiting on its read ${waitedMs} ms after it began, with maxWaitMs 3000 (${beatsAtEnd} heartbeats)`).not.toBe('still waiting');
    expect((ended as ApplicationFailure).type).toBe(IdempotencyClaimBusy);
    expect((ended as ApplicationFailure).nonRetryable).toBe(false);
    expect(waitedMs).toBeLessThan(6_000);

    first.finish('transferred');
    await expect(owner).resolves.toBe('transferred');
    expect(calls).toBe(1);
  });
});
