/**
 * A claim without an outcome (its owner died mid-call, or the outcome was
 * unknown) is refused unless somebody can know better: a vendor that dedups on
 * the key (`vendorDedup`: take the claim over and call again with the same key)
 * or a `reconcile` that asks the vendor. Every answer a reconciler can give, two
 * attempts racing for one orphan, and the hung owner that is never taken over,
 * through MockActivityEnvironment on the in-memory store. No services.
 */
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { defaultPayloadConverter } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { IdempotencyOrphanedClaim, IdempotencyStoreUnavailable, OutcomeUnknownError, idempotencyKey, keyToUuid } from '../../src/index.js';
import type { ReconcileCall, Reconciliation, RefusalDetails } from '../../src/index.js';
import type { IdempotentActivityEnvironmentOptions } from '../../src/testing/index.js';
import { Attempts, HUNG_LEASE_MS, callInFlight, errorOf, failureOf } from '../support/unit-attempts.js';

const LEASE_MS = 30_000;

/** A call whose first attempt's outcome is unknown, and what every attempt's call carried. */
function placeCallActivity() {
  const keys: string[] = [];
  return {
    keys,
    async placeCall(to: string): Promise<string> {
      keys.push(idempotencyKey());
      if (keys.length === 1) throw new OutcomeUnknownError(`the line to ${to} dropped after dialling`);
      return `call ${keys.length} placed`;
    },
  };
}

/** Attempt 1 leaves the claim `unknown` (and, with a reconciler or vendorDedup, is retried by Temporal). */
async function orphanedByAttempt1(options: Omit<IdempotentActivityEnvironmentOptions, 'store' | 'mockOptions'>) {
  const attempts = new Attempts(options);
  const activity = placeCallActivity();
  const first = await errorOf(() => attempts.attempt('placeCall', 1).run(activity.placeCall, '+15550001'));
  return { attempts, activity, first };
}

function withReconciler(answer: (call: ReconcileCall) => Promise<Reconciliation>, more: { vendorDedup?: boolean } = {}) {
  const asked: ReconcileCall[] = [];
  return {
    asked,
    options: {
      audit: true,
      activities: {
        placeCall: {
          ...more,
          reconcile: (call: ReconcileCall) => {
            asked.push(call);
            return answer(call);
          },
        },
      },
    },
  };
}

describe('vendorDedup: the vendor answers a repeat of the key with its original response', () => {
  it('rethrows an ambiguous error as it was (Temporal retries), and the retry takes the claim over and calls with the same key', async () => {
    const { attempts, activity, first } = await orphanedByAttempt1({ activities: { placeCall: { vendorDedup: true } } });
    expect(first).toBeInstanceOf(OutcomeUnknownError);
    expect(await attempts.store.onlyClaim()).toMatchObject({ state: 'unknown', attempt: 1 });

    await expect(attempts.attempt('placeCall', 2).run(activity.placeCall, '+15550001')).resolves.toBe('call 2 placed');

    expect(activity.keys).toEqual([activity.keys[0], activity.keys[0]]);
    expect(await attempts.store.onlyClaim()).toMatchObject({ state: 'completed', attempt: 2 });
    expect(attempts.logged('WARN', /re-running an orphaned call with the same key; the vendor dedups on it/)).toHaveLength(1);
  });

  it('takes over from a dead owner, and the owner finishing late does not record over the taker', async () => {
    const attempts = new Attempts({ leaseMs: LEASE_MS, activities: { chargeCard: { vendorDedup: true } } });
    const owner = callInFlight<string>();
    const keys: string[] = [];
    const chargeCard = async (_orderId: string) => {
      keys.push(idempotencyKey());
      return keys.length === 1 ? owner.body() : 'ch_1 (answered by the vendor for the repeat)';
    };
    const paused = attempts.attempt('chargeCard', 1).run(chargeCard, 'o-1');
    await expect.poll(owner.started).toBe(true);
    attempts.clock.advance(LEASE_MS);

    await expect(attempts.attempt('chargeCard', 2).run(chargeCard, 'o-1')).resolves.toBe('ch_1 (answered by the vendor for the repeat)');
    owner.finish('ch_1');
    await expect(paused).resolves.toBe('ch_1');

    expect(keys).toEqual([keys[0], keys[0]]);
    const claim = await attempts.store.onlyClaim();
    expect(claim).toMatchObject({ state: 'completed', attempt: 2 });
    expect(defaultPayloadConverter.fromPayload(claim.result!)).toBe('ch_1 (answered by the vendor for the repeat)');
    expect(attempts.logged('WARN', /changed by someone else while the call ran; did not record its result/)).toHaveLength(1);
  });

  it('fails retryably, without calling, when the store cannot take the claim over', async () => {
    const { attempts, activity } = await orphanedByAttempt1({ activities: { placeCall: { vendorDedup: true } } });
    attempts.store.fail('takeOver');

    const refusal = await failureOf(() => attempts.attempt('placeCall', 2).run(activity.placeCall, '+15550001'));

    expect(refusal.type).toBe(IdempotencyStoreUnavailable);
    expect(refusal.nonRetryable).toBe(false);
    expect(activity.keys).toHaveLength(1);
    expect(await attempts.store.onlyClaim()).toMatchObject({ state: 'unknown', attempt: 1 });
  });
});

describe('reconcile: ask the vendor before refusing', () => {
  it('happened: records and returns the vendor\'s result without calling; later attempts answer from the record', async () => {
    const reconciler = withReconciler(async () => ({ outcome: 'happened', result: 'call 1 placed (found at the vendor)' }));
    const { attempts, activity, first } = await orphanedByAttempt1(reconciler.options);
    // With a reconciler the next attempt can do better than a refusal: the ambiguous error is retried.
    expect(first).toBeInstanceOf(OutcomeUnknownError);

    await expect(attempts.attempt('placeCall', 2).run(activity.placeCall, '+15550001')).resolves.toBe('call 1 placed (found at the vendor)');
    await expect(attempts.attempt('placeCall', 3).run(activity.placeCall, '+15550001')).resolves.toBe('call 1 placed (found at the vendor)');

    expect(activity.keys).toHaveLength(1);
    expect(reconciler.asked).toHaveLength(1);
    const [asked] = reconciler.asked;
    expect(asked).toMatchObject({ key: activity.keys[0], keyUuid: keyToUuid(activity.keys[0]!), args: ['+15550001'] });
    expect(asked!.claim).toMatchObject({ state: 'unknown', attempt: 1 });
    expect(asked!.info.attempt).toBe(2);
    const claim = await attempts.store.onlyClaim();
    expect(claim).toMatchObject({ state: 'completed', attempt: 2 });
    expect(attempts.store.auditLedger().entries().filter((entry) => entry.event === 'reconciled')).toMatchObject([{ answer: 'happened' }]);
  });

  it('not-happened: calls the activity, with the same key', async () => {
    const reconciler = withReconciler(async () => ({ outcome: 'not-happened' }));
    const { attempts, activity } = await orphanedByAttempt1(reconciler.options);

    await expect(attempts.attempt('placeCall', 2).run(activity.placeCall, '+15550001')).resolves.toBe('call 2 placed');

    expect(activity.keys).toEqual([activity.keys[0], activity.keys[0]]);
    expect(await attempts.store.onlyClaim()).toMatchObject({ state: 'completed', attempt: 2 });
    expect(attempts.store.auditLedger().entries().filter((entry) => entry.event === 'reconciled')).toMatchObject([{ answer: 'not-happened' }]);
  });

  it('asks about a dead owner\'s call too, not only an unknown outcome', async () => {
    const reconciler = withReconciler(async () => ({ outcome: 'happened', result: 'ch_1' }));
    const attempts = new Attempts({ leaseMs: LEASE_MS, activities: { chargeCard: reconciler.options.activities.placeCall } });
    const owner = callInFlight<string>();
    let calls = 0;
    const chargeCard = async (_orderId: string) => {
      calls++;
      return owner.body();
    };
    const dead = attempts.attempt('chargeCard', 1).run(chargeCard, 'o-1');
    await expect.poll(owner.started).toBe(true);
    attempts.clock.advance(LEASE_MS);

    await expect(attempts.attempt('chargeCard', 2).run(chargeCard, 'o-1')).resolves.toBe('ch_1');

    expect(calls).toBe(1);
    expect(reconciler.asked[0]!.claim).toMatchObject({ state: 'claimed', ownerAlive: false, attempt: 1 });
    owner.finish('ch_1');
    await dead;
  });

  it.each<[string, (call: ReconcileCall) => Promise<Reconciliation>, RegExp, RegExp | null]>([
    ['unknown', async () => ({ outcome: 'unknown', reason: 'lookup answered 503' }), /^reconcile could not tell about the call of attempt 1/, /^lookup answered 503$/],
    [
      'a reconciler that throws',
      async () => {
        throw new TypeError('fetch failed');
      },
      /^reconcile threw TypeError about the call of attempt 1/,
      /TypeError: fetch failed/,
    ],
    [
      'a reconciler that gives no answer in time',
      ({ signal }) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason as Error))),
      /^reconcile gave no answer within 50 ms about the call/,
      null,
    ],
    // Found in review: a lazy response object whose getters throw escaped as a retryable TypeError, each attempt
    // took the claim over and asked again, and the workflow ended in TypeError instead of the refusal.
    [
      'an answer whose outcome throws when read',
      async () =>
        ({
          get outcome(): never {
            throw new TypeError('response body already consumed');
          },
        }) as unknown as Reconciliation,
      /^reconcile answered something that throws when read \(TypeError\) about the call of attempt 1/,
      /TypeError: response body already consumed/,
    ],
    [
      'a happened answer whose result throws when read',
      async () =>
        ({
          outcome: 'happened',
          get result(): never {
            throw new TypeError('response body already consumed');
          },
        }) as unknown as Reconciliation,
      /^reconcile answered something that throws when read \(TypeError\) about the call of attempt 1/,
      /TypeError: response body already consumed/,
    ],
    [
      'an unknown answer whose reason throws when read',
      async () =>
        ({
          outcome: 'unknown',
          get reason(): never {
            throw new TypeError('response body already consumed');
          },
        }) as unknown as Reconciliation,
      /^reconcile answered something that throws when read \(TypeError\) about the call of attempt 1/,
      /TypeError: response body already consumed/,
    ],
    [
      'an answer that is not one',
      async () => ({ outcome: 'maybe' }) as unknown as Reconciliation,
      /^reconcile answered something other than \{ outcome: happened \| not-happened \| unknown \}/,
      null,
    ],
  ])('%s: the refusal stands, non-retryable, with the answer in it; the activity is not called', async (_, answer, note, detail) => {
    const reconciler = withReconciler(answer);
    const { attempts, activity } = await orphanedByAttempt1({ ...reconciler.options, reconcileTimeoutMs: 50 });

    const refusal = await failureOf(() => attempts.attempt('placeCall', 2).run(activity.placeCall, '+15550001'));

    expect(refusal.type).toBe(IdempotencyOrphanedClaim);
    expect(refusal.nonRetryable).toBe(true);
    const details = refusal.details?.[0] as RefusalDetails;
    expect(details.outcomeNote).toMatch(note);
    if (detail) expect(details.outcomeDetail).toMatch(detail);
    expect(activity.keys).toHaveLength(1);
    expect(await attempts.store.onlyClaim()).toMatchObject({ state: 'unknown', outcomeNote: expect.stringMatching(note) });
    expect(attempts.store.auditLedger().entries().filter((entry) => entry.event === 'reconciled')).toMatchObject([{ answer: 'unknown' }]);
    // The next attempt asks again: the vendor's lookup may be back.
    await failureOf(() => attempts.attempt('placeCall', 3).run(activity.placeCall, '+15550001'));
    expect(reconciler.asked).toHaveLength(2);
  });

  it('aborts the signal it gave a reconciler that ran out of time', async () => {
    const reconciler = withReconciler(({ signal }) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')))));
    const { attempts, activity } = await orphanedByAttempt1({ ...reconciler.options, reconcileTimeoutMs: 50 });
    await failureOf(() => attempts.attempt('placeCall', 2).run(activity.placeCall, '+15550001'));
    expect(reconciler.asked[0]!.signal.aborted).toBe(true);
    expect(String(reconciler.asked[0]!.signal.reason)).toMatch(/reconcile timed out after 50 ms/);
  });

  it('cancelled while asking (a deploy stops the worker): not refused; the claim stays unknown and the next attempt asks again', async () => {
    let asking = 0;
    const reconciler = withReconciler(async ({ signal }) => {
      if (++asking > 1) return { outcome: 'happened', result: 'call 1 placed' };
      return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    });
    const { attempts, activity } = await orphanedByAttempt1(reconciler.options);
    const attempt2 = attempts.attempt('placeCall', 2);
    const cancelled = errorOf(() => attempt2.run(activity.placeCall, '+15550001'));
    await expect.poll(() => reconciler.asked.length).toBe(1);

    attempt2.cancel();

    const error = await cancelled;
    expect(error).toBeInstanceOf(CancelledFailure);
    expect(await attempts.store.onlyClaim()).toMatchObject({ state: 'unknown', outcomeNote: expect.stringMatching(/cancelled while asking the vendor/) });
    await expect(attempts.attempt('placeCall', 3).run(activity.placeCall, '+15550001')).resolves.toBe('call 1 placed');
    expect(activity.keys).toHaveLength(1);
  });

  it('unknown, with vendorDedup too: calls again with the same key, which the vendor dedups on', async () => {
    const reconciler = withReconciler(async () => ({ outcome: 'unknown' }), { vendorDedup: true });
    const { attempts, activity } = await orphanedByAttempt1(reconciler.options);

    await expect(attempts.attempt('placeCall', 2).run(activity.placeCall, '+15550001')).resolves.toBe('call 2 placed');

    expect(activity.keys).toEqual([activity.keys[0], activity.keys[0]]);
    expect(attempts.logged('WARN', /reconcile could not tell; re-running with the same key/)).toHaveLength(1);
  });

  it('without reconcile or vendorDedup, an unknown outcome is refused at once (the error is not retried)', async () => {
    const { attempts, activity, first } = await orphanedByAttempt1({});
    expect(first).toBeInstanceOf(ApplicationFailure);
    expect((first as ApplicationFailure).type).toBe(IdempotencyOrphanedClaim);
    expect((await failureOf(() => attempts.attempt('placeCall', 2).run(activity.placeCall, '+15550001'))).type).toBe(IdempotencyOrphanedClaim);
    expect(activity.keys).toHaveLength(1);
  });
});

describe('two attempts find one orphan at once: one takes it over, the other loses the takeover', () => {
  /**
   * Attempts 2 and 3 of placeCall, started together: both read the orphan before either takes it over.
   * Which one wins is the store's to decide; a waiting attempt heartbeats, so the heartbeats say who waits.
   */
  function racing(attempts: Attempts, placeCall: (to: string) => Promise<string>) {
    const heartbeats = new Map<number, number>();
    const releaseTakeOvers = attempts.store.stall('takeOver');
    const results = [2, 3].map((attempt) => {
      const environment = attempts.attempt('placeCall', attempt);
      environment.on('heartbeat', () => heartbeats.set(attempt, (heartbeats.get(attempt) ?? 0) + 1));
      return environment.run(placeCall, '+15550001');
    });
    return {
      heartbeats,
      results: Promise.all(results),
      /** Lets both takeovers through once both attempts asked for one. */
      async bothTakeOvers(): Promise<void> {
        await expect.poll(() => attempts.store.asked.get('takeOver')).toBe(2);
        releaseTakeOvers();
      },
    };
  }

  it('reconcile: the vendor is asked once; the loser waits on the winner\'s claim and answers with the result it recorded', async () => {
    const vendor = callInFlight<Reconciliation>();
    const reconciler = withReconciler(() => vendor.body());
    const { attempts, activity } = await orphanedByAttempt1(reconciler.options);
    const race = racing(attempts, activity.placeCall);

    await race.bothTakeOvers();
    await expect.poll(() => reconciler.asked.length).toBe(1);
    const winner = reconciler.asked[0]!.info.attempt;
    const loser = winner === 2 ? 3 : 2;
    // The loser's takeover found the claim already taken: it claims again, finds the winner's claim alive, and waits.
    await expect.poll(() => race.heartbeats.get(loser) ?? 0).toBeGreaterThan(0);
    vendor.finish({ outcome: 'happened', result: 'call 1 placed (found at the vendor)' });

    await expect(race.results).resolves.toEqual(['call 1 placed (found at the vendor)', 'call 1 placed (found at the vendor)']);
    expect(reconciler.asked).toHaveLength(1);
    expect(activity.keys).toHaveLength(1);
    // Attempt 1's claim, both racers', and the loser's again after its takeover came back empty.
    expect(attempts.store.asked.get('begin')).toBe(4);
    expect(await attempts.store.onlyClaim()).toMatchObject({ state: 'completed', attempt: winner });
    expect(attempts.store.auditLedger().entries().filter((entry) => entry.event === 'reconciled')).toMatchObject([{ answer: 'happened' }]);
    expect(attempts.logged('INFO', /returning the recorded result; the activity was not called again/)).toHaveLength(1);
  });

  it('vendorDedup: the call is made again once, with the same key; the loser waits for it and answers with its result', async () => {
    const attempts = new Attempts({ activities: { placeCall: { vendorDedup: true } } });
    const repeat = callInFlight<string>();
    const keys: string[] = [];
    const placeCall = async (to: string): Promise<string> => {
      keys.push(idempotencyKey());
      if (keys.length === 1) throw new OutcomeUnknownError(`the line to ${to} dropped after dialling`);
      return repeat.body();
    };
    await errorOf(() => attempts.attempt('placeCall', 1).run(placeCall, '+15550001'));
    const race = racing(attempts, placeCall);

    await race.bothTakeOvers();
    await expect.poll(repeat.started).toBe(true);
    // Only the loser waits (and heartbeats); the winner is in the call.
    await expect.poll(() => race.heartbeats.size).toBe(1);
    const [loser] = [...race.heartbeats.keys()];
    const winner = loser === 2 ? 3 : 2;
    repeat.finish('call 2 placed');

    await expect(race.results).resolves.toEqual(['call 2 placed', 'call 2 placed']);
    expect(keys).toEqual([keys[0], keys[0]]);
    expect(attempts.store.asked.get('begin')).toBe(4);
    expect(await attempts.store.onlyClaim()).toMatchObject({ state: 'completed', attempt: winner });
    expect(attempts.logged('WARN', /re-running an orphaned call with the same key; the vendor dedups on it/)).toHaveLength(1);
  });
});

describe("a hung owner: its worker still renews the lease past its attempt's deadline", () => {
  /** Attempt 1's call hangs: claimed, never answered, its lease held while the clock passes its deadline. */
  async function hungAttempt1(options: Omit<IdempotentActivityEnvironmentOptions, 'store' | 'mockOptions'>) {
    const attempts = new Attempts({ leaseMs: HUNG_LEASE_MS, ...options });
    const call = callInFlight<string>();
    let calls = 0;
    const placeCall = async (_to: string) => {
      calls++;
      return call.body();
    };
    const owner = attempts.attempt('placeCall', 1, { startToCloseTimeoutMs: 1_000 }).run(placeCall, '+15550001');
    await expect.poll(call.started).toBe(true);
    await attempts.passDeadline();
    return { attempts, call, owner, placeCall, calls: () => calls };
  }

  it('is refused as owner-hung, never taken over, reconciled or called again, even with reconcile and vendorDedup', async () => {
    const reconciler = withReconciler(async () => ({ outcome: 'not-happened' }), { vendorDedup: true });
    const hung = await hungAttempt1(reconciler.options);

    for (const attempt of [2, 3]) {
      const refusal = await failureOf(() => hung.attempts.attempt('placeCall', attempt).run(hung.placeCall, '+15550001'));
      expect(refusal.type).toBe(IdempotencyOrphanedClaim);
      expect(refusal.nonRetryable).toBe(true);
      expect((refusal.details?.[0] as RefusalDetails)).toMatchObject({ reason: 'owner-hung', attempt: 1, refusedAttempt: attempt });
    }

    expect(hung.attempts.store.asked.get('takeOver')).toBeUndefined();
    expect(reconciler.asked).toEqual([]);
    expect(hung.calls()).toBe(1);
    expect(hung.attempts.store.auditLedger().entries().filter((entry) => entry.event === 'reconciled')).toEqual([]);
    expect(await hung.attempts.store.onlyClaim()).toMatchObject({ state: 'claimed', attempt: 1, ownerAlive: true });
    // The hung call may still land, and does: its own result is recorded.
    hung.call.finish('call 1 placed');
    await expect(hung.owner).resolves.toBe('call 1 placed');
    expect(await hung.attempts.store.onlyClaim()).toMatchObject({ state: 'completed', attempt: 1 });
  });

  it('once its worker dies too (the lease lapses), it is an orphan like any other: taken over and reconciled', async () => {
    const reconciler = withReconciler(async () => ({ outcome: 'happened', result: 'call 1 placed (found at the vendor)' }));
    const hung = await hungAttempt1(reconciler.options);
    hung.attempts.clock.advance(HUNG_LEASE_MS);

    await expect(hung.attempts.attempt('placeCall', 2).run(hung.placeCall, '+15550001')).resolves.toBe('call 1 placed (found at the vendor)');

    expect(reconciler.asked).toHaveLength(1);
    expect(reconciler.asked[0]!.claim).toMatchObject({ state: 'claimed', ownerAlive: false, attempt: 1 });
    expect(hung.calls()).toBe(1);
    hung.call.finish('call 1 placed');
    await hung.owner;
  });
});
