/**
 * A call `resumable()` makes again after an operator's decision (README "Operator
 * decisions"): it carries the refused call's key, so that key's record decides
 * whatever the scope, even under `call` scope, where the new activity id gives
 * the call a new key of its own. The record's arguments must be the call's. On
 * the in-memory store, which looks the refused key up as Postgres does. No services.
 */
import { describe, expect, it } from 'vitest';
import { IdempotencyKeyReuse, IdempotencyOrphanedClaim } from '../../src/index.js';
import type { RefusalDetails } from '../../src/index.js';
import { Attempts, callInFlight, failureOf } from '../support/unit-attempts.js';

const LEASE_MS = 30_000;
const order = { orderId: 'o-42', amountCents: 1999 };

/**
 * The first pass: attempt 1 of chargeCard (activity id 1, call scope) calls and its worker stops
 * renewing; attempt 2 is refused as orphaned. Returns the refused key and the call still in flight.
 */
async function refusedCharge() {
  const attempts = new Attempts({ leaseMs: LEASE_MS, activities: { chargeCard: { scope: 'call' } } });
  const inFlight = callInFlight<string>();
  let calls = 0;
  const chargeCard = async (_order: typeof order) => {
    calls++;
    return inFlight.body();
  };
  const owner = attempts.attempt('chargeCard', 1, { activityId: '1' }).run(chargeCard, order);
  await expect.poll(inFlight.started).toBe(true);
  attempts.clock.advance(LEASE_MS);
  const refusal = await failureOf(() => attempts.attempt('chargeCard', 2, { activityId: '1' }).run(chargeCard, order));
  expect(refusal.type).toBe(IdempotencyOrphanedClaim);
  const { key } = refusal.details?.[0] as RefusalDetails;
  /** The same call on the pass after the decision: a new activity id, the refused key in its header. */
  const resumed = (args: typeof order) =>
    attempts.resumedAttempt('chargeCard', 1, { key, activityType: 'chargeCard', match: 'same' }, { activityId: '7' }).run(chargeCard, args);
  return { attempts, inFlight, owner, chargeCard, key, resumed, calls: () => calls };
}

describe("a resumed call in the refused call's place", () => {
  it("is answered from the refused key's record once it completed, though call scope gives it a key of its own", async () => {
    const { attempts, inFlight, owner, chargeCard, key, resumed, calls } = await refusedCharge();
    inFlight.finish('ch_1');
    await expect(owner).resolves.toBe('ch_1');

    await expect(resumed(order)).resolves.toBe('ch_1');
    expect(calls()).toBe(1);
    expect(await attempts.store.claims()).toMatchObject([{ key, state: 'completed' }]);
    // Without the header, the same call with its new activity id is a new key under call scope: it would charge again.
    await expect(attempts.attempt('chargeCard', 1, { activityId: '7' }).run(chargeCard, order)).resolves.toBe('ch_1');
    expect(calls()).toBe(2);
  });

  it('runs for real after the refused key was released, once', async () => {
    const { attempts, inFlight, owner, key, resumed, calls } = await refusedCharge();
    // The operator checked the vendor (the paused call never reached it) and released the key, with --force.
    await attempts.store.release((await attempts.store.get(key))!);

    const running = resumed(order);
    await expect.poll(calls).toBe(2);
    inFlight.finish('ch_2');
    await expect(running).resolves.toBe('ch_2');
    await expect(owner).resolves.toBe('ch_2');
    expect(await attempts.store.claims()).toMatchObject([{ state: 'completed', activityId: '7' }]);
  });

  it('with other arguments than the completed record: refused by name (resumed-arguments-changed), never called', async () => {
    const { inFlight, owner, key, resumed, calls } = await refusedCharge();
    inFlight.finish('ch_1');
    await owner;

    const refusal = await failureOf(() => resumed({ ...order, amountCents: 2999 }));

    expect(refusal.type).toBe(IdempotencyKeyReuse);
    expect(refusal.nonRetryable).toBe(true);
    expect(refusal.details?.[0]).toMatchObject({ key, reason: 'resumed-arguments-changed', refusedActivityId: '7' });
    expect(calls()).toBe(1);
  });

  it('with other arguments while the record has no outcome: refused again, and the workflow waits again on the refused key', async () => {
    const { attempts, inFlight, owner, key, resumed, calls } = await refusedCharge();

    const refusal = await failureOf(() => resumed({ ...order, amountCents: 2999 }));

    expect(refusal.type).toBe(IdempotencyOrphanedClaim);
    expect(refusal.details?.[0]).toMatchObject({ key, reason: 'owner-died' });
    expect(calls()).toBe(1);
    // Noted again (the first pass's refusal noted it once), so the next decision on the key reaches it.
    expect(attempts.store.asked.get('addWaiter')).toBe(2);
    expect((await attempts.store.waitersOf(key)).map((waiter) => waiter.workflowId)).toEqual(['order-42']);
    // Never taken over, reconciled or re-run with these arguments: the claim is as the dead owner left it.
    expect(await attempts.store.get(key)).toMatchObject({ state: 'claimed', attempt: 1, activityId: '1', result: null });
    inFlight.finish('ch_1');
    await owner;
  });
});
