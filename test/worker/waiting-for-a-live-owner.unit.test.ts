/**
 * An attempt that finds a live owner polls the claim (`store.get`) until the owner settles, the
 * wait runs out, or the attempt is cancelled. The wait is bounded by `maxWaitMs` and by the
 * attempt's own start-to-close timeout whatever the store does: a read that never answers (a
 * half-open connection after a failover, the case the lease renewal is bounded for) must not hold
 * the attempt past either, nor keep it heartbeating after it gave up. No services.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { IdempotencyClaimBusy, IdempotencyStoreUnavailable } from '../../src/index.js';
import { Attempts, waitingOnRunningOwner } from '../support/unit-attempts.js';

/** `promise`, or 'still waiting' once `ms` passed without it settling. */
async function within<T>(ms: number, promise: Promise<T>): Promise<T | 'still waiting'> {
  return Promise.race([promise, sleep(ms).then(() => 'still waiting' as const)]);
}

describe('an attempt waiting for a live owner, when a read of the claim never answers', () => {
  it('stops at maxWaitMs, retryably, instead of waiting on the read', async () => {
    const attempts = new Attempts({ maxWaitMs: 1_500 });
    const { first, owner, waiting, started, calls } = await waitingOnRunningOwner(attempts);
    await expect.poll(() => attempts.store.asked.get('get') ?? 0).toBeGreaterThanOrEqual(1);

    // The next read goes out on a connection a failover left half-open: no answer, no error.
    const answer = attempts.store.stall('get');

    const ended = await within(4_000, waiting);
    answer();
    expect(ended, 'the attempt waited on its read past maxWaitMs (1.5 s)').not.toBe('still waiting');
    expect([IdempotencyClaimBusy, IdempotencyStoreUnavailable]).toContain((ended as Awaited<typeof waiting>).type);
    expect((ended as Awaited<typeof waiting>).nonRetryable).toBe(false);
    expect(Date.now() - started).toBeLessThan(4_000);
    expect(calls()).toBe(1);
    first.finish('transferred');
    await owner;
  });

  it('stops at its own start-to-close timeout, whatever maxWaitMs says', async () => {
    const attempts = new Attempts({ maxWaitMs: 60_000 });
    const { first, owner, waiting } = await waitingOnRunningOwner(attempts, { startToCloseTimeoutMs: 2_500 });
    await expect.poll(() => attempts.store.asked.get('get') ?? 0).toBeGreaterThanOrEqual(1);
    const answer = attempts.store.stall('get');

    const ended = await within(5_000, waiting);
    answer();
    expect(ended, 'the attempt waited on its read past its own start-to-close timeout').not.toBe('still waiting');
    first.finish('transferred');
    await owner;
  });

  it('stops at once when cancelled, and heartbeats no more', async () => {
    const attempts = new Attempts({ maxWaitMs: 60_000 });
    const { first, owner, waiter, waiting, heartbeats } = await waitingOnRunningOwner(attempts);
    await expect.poll(() => attempts.store.asked.get('get') ?? 0).toBeGreaterThanOrEqual(1);
    const answer = attempts.store.stall('get');
    const stalledAt = attempts.store.asked.get('get')!;
    await expect.poll(() => attempts.store.asked.get('get')).toBeGreaterThan(stalledAt);

    waiter.cancel();

    const ended = await within(2_000, waiting);
    const beatsAtEnd = heartbeats();
    await sleep(2_500);
    answer();
    expect(ended, 'a cancelled attempt went on waiting on its read').not.toBe('still waiting');
    expect(heartbeats(), 'the attempt went on heartbeating after it stopped waiting').toBe(beatsAtEnd);
    first.finish('transferred');
    await owner;
  });
});

describe('an attempt waiting for a live owner, on every way out of the wait', () => {
  it.each(['busy', 'store down', 'answered'] as const)('heartbeats no more once the wait ended: %s', async (end) => {
    {
      const attempts = new Attempts({ maxWaitMs: end === 'busy' ? 1_200 : 60_000 });
      const { first, owner, waiting, heartbeats } = await waitingOnRunningOwner(attempts);
      if (end === 'store down') attempts.store.fail('get');
      if (end === 'answered') first.finish('transferred');
      const outcome = await within(5_000, waiting.catch((error: unknown) => error));
      expect(outcome, end).not.toBe('still waiting');
      const beats = heartbeats();
      await sleep(2_200);
      expect(heartbeats(), `heartbeats after the wait ended (${end})`).toBe(beats);
      attempts.store.heal('get');
      first.finish('transferred');
      await owner;
    }
  });

  it('reads about once per poll interval (a quarter of a 1 s lease), never in a busy loop, even once cancelled', async () => {
    const attempts = new Attempts({ leaseMs: 1_000, maxWaitMs: 60_000 });
    const { first, owner, waiter, waiting } = await waitingOnRunningOwner(attempts);
    const before = attempts.store.asked.get('get') ?? 0;
    await sleep(2_000);
    const inTwoSeconds = (attempts.store.asked.get('get') ?? 0) - before;
    // 250 ms apart: 8 in 2 s, give or take the timers' slack.
    expect(inTwoSeconds).toBeGreaterThanOrEqual(5);
    expect(inTwoSeconds).toBeLessThanOrEqual(10);
    waiter.cancel();
    expect((await waiting).type).toBe(IdempotencyClaimBusy);
    const atEnd = attempts.store.asked.get('get') ?? 0;
    await sleep(500);
    expect(attempts.store.asked.get('get')).toBe(atEnd);
    first.finish('transferred');
    await owner;
  });
});

describe('an attempt waiting for a live owner, with bounds far away', () => {
  it('waits on (no timer overflow ends it early) and answers with the owner\'s result under a huge maxWaitMs and timeout', async () => {
    // Past 2^31 - 1 ms, a Node timer fires after 1 ms: a wait timed by one would give up at once.
    const attempts = new Attempts({ maxWaitMs: 1e12 });
    // Each read takes a little while, as one over the network does.
    const read = attempts.store.get.bind(attempts.store);
    attempts.store.get = async (key) => (await sleep(20), read(key));
    const { first, owner, waiting, calls } = await waitingOnRunningOwner(attempts, { startToCloseTimeoutMs: 1e12 });
    expect(await within(1_500, waiting), 'the attempt stopped waiting with its owner still running').toBe('still waiting');
    first.finish('transferred');
    await owner;
    // The waiter answers from the record: failureOf rejects with "expected the attempt to fail, it returned".
    await expect(waiting).rejects.toThrow('it returned "transferred"');
    expect(calls()).toBe(1);
  });
});

describe('an attempt that waited for a live owner and was then refused', () => {
  it('is on record as waiting (the claim flagged awaited), so the owner that records late tells its workflow, or logs how to', async () => {
    const attempts = new Attempts({ leaseMs: 30_000 });
    const { first, owner, waiting, calls } = await waitingOnRunningOwner(attempts);
    // The owner stops renewing (a GC pause, a frozen VM): the waiter's next read finds its lease lapsed.
    attempts.clock.advance(30_000);
    const refusal = await waiting;
    expect(refusal.type).toBe('IdempotencyOrphanedClaim');

    first.finish('transferred'); // the owner comes back and records its result
    await expect(owner).resolves.toBe('transferred');

    const { key } = await attempts.store.onlyClaim();
    expect(calls()).toBe(1);
    // No Temporal client in a MockActivityEnvironment: the waiter stays on record, untold, for `resume`.
    expect(attempts.logged('ERROR', new RegExp(`run \`temporal-idempotency resume ${key}\``))).toHaveLength(1);
    expect((await attempts.store.waitersOf(key)).map((waiter) => waiter.workflowId)).toEqual(['order-42']);
  });
});
