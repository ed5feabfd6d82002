/**
 * Every failure path of a call that ran under a claim (README "When the
 * activity throws: did anything happen?"), and of the record after it: the
 * error the attempt ends with, whether the next attempt may call again, and
 * the claim left in the in-memory store. No services.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure, CompleteAsyncError } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { IdempotencyClaimBusy, IdempotencyOrphanedClaim, NotSentError, OutcomeUnknownError } from '../../src/index.js';
import { Attempts, callInFlight, errorOf, failureOf } from '../support/unit-attempts.js';

const LEASE_MS = 30_000;
const transportError = (code: string, message = `${code} from the transport`) => Object.assign(new Error(message), { code });

/**
 * Attempt 1 throws `error` (from the activity, once); attempt 2 of the same action follows. Returns
 * what each ended with, how often the activity was called, and the claim between the two attempts.
 */
async function throwThenRetry(error: unknown, attempts = new Attempts()) {
  let calls = 0;
  const sendSms = async (_to: string): Promise<string> => {
    if (++calls === 1) throw error;
    return `sent (call ${calls})`;
  };
  const first = await errorOf(() => attempts.attempt('sendSms', 1).run(sendSms, '+15550001'));
  const claimsBetween = await attempts.store.claims();
  const second = await attempts.attempt('sendSms', 2).run(sendSms, '+15550001').catch((failure: unknown) => failure);
  return { first, second, calls, claimsBetween, attempts };
}

function expectRefusedAsUnknown(failure: unknown, note: RegExp): void {
  expect(failure).toBeInstanceOf(ApplicationFailure);
  expect((failure as ApplicationFailure).type).toBe(IdempotencyOrphanedClaim);
  expect((failure as ApplicationFailure).nonRetryable).toBe(true);
  expect((failure as ApplicationFailure).details?.[0]).toMatchObject({ reason: 'outcome-unknown', outcomeNote: expect.stringMatching(note) });
}

describe('an error that means nothing happened: the claim is released and Temporal retries', () => {
  it.each([
    ['the activity\'s own error (a validation error, a vendor\'s 4xx)', new Error('card declined')],
    ['a connection that was refused', transportError('ECONNREFUSED')],
    ['a host that did not resolve, deep in the cause chain', new Error('fetch failed', { cause: transportError('ENOTFOUND') })],
    ['NotSentError', new NotSentError('the request was never built')],
    ['NotSentError in the cause chain', new Error('wrapped', { cause: new NotSentError('never sent') })],
  ])('%s: rethrown as it was, no claim left, and the retry calls again', async (_, error) => {
    const { first, second, calls, claimsBetween, attempts } = await throwThenRetry(error);
    expect(first).toBe(error);
    expect(claimsBetween).toEqual([]);
    expect(second).toBe('sent (call 2)');
    expect(calls).toBe(2);
    expect(await attempts.store.onlyClaim()).toMatchObject({ state: 'completed', attempt: 2 });
  });
});

describe('an error after which the call may have happened: the claim is kept unknown and every attempt refused', () => {
  it.each([
    ['OutcomeUnknownError', new OutcomeUnknownError('timed out after sending'), /^the activity threw OutcomeUnknownError$/],
    ['OutcomeUnknownError in the cause chain', new Error('wrapped', { cause: new OutcomeUnknownError('?') }), /^the activity threw Error$/],
    ['a connection reset mid-request', transportError('ECONNRESET', 'socket hang up'), /request may have reached the vendor \(ECONNRESET\)/],
    ['a response body that timed out', new TypeError('terminated', { cause: transportError('UND_ERR_BODY_TIMEOUT') }), /\(UND_ERR_BODY_TIMEOUT\)/],
    ['an abort mid-request', Object.assign(new Error('This operation was aborted'), { name: 'AbortError' }), /\(AbortError\)/],
  ])('%s: this attempt and the next are refused, non-retryably; the activity ran once', async (_, error, note) => {
    const { first, second, calls, claimsBetween } = await throwThenRetry(error);
    expectRefusedAsUnknown(first, note);
    expectRefusedAsUnknown(second, note);
    expect(calls).toBe(1);
    expect(claimsBetween).toMatchObject([{ state: 'unknown', outcomeNote: expect.stringMatching(note) }]);
  });

  it('counts an error the activity type\'s isAmbiguous matches (any truthy answer) as ambiguous', async () => {
    const attempts = new Attempts({ activities: { sendSms: { isAmbiguous: (error) => (error as { status?: number }).status === 504 && 'gateway' } } });
    const { first, second, calls } = await throwThenRetry(Object.assign(new Error('gateway timeout'), { status: 504 }), attempts);
    expectRefusedAsUnknown(first, /^isAmbiguous matched the activity's Error$/);
    expectRefusedAsUnknown(second, /isAmbiguous matched/);
    expect(calls).toBe(1);
  });

  it('leaves an error isAmbiguous does not match to the other rules: definite', async () => {
    const attempts = new Attempts({ activities: { sendSms: { isAmbiguous: () => false } } });
    const { second, calls } = await throwThenRetry(new Error('card declined'), attempts);
    expect(second).toBe('sent (call 2)');
    expect(calls).toBe(2);
  });

  it('counts an isAmbiguous that throws as ambiguous, and the note says so', async () => {
    const attempts = new Attempts({
      activities: {
        sendSms: {
          isAmbiguous: () => {
            throw new TypeError('cannot read status of undefined');
          },
        },
      },
    });
    const { first, calls } = await throwThenRetry(new Error('card declined'), attempts);
    expectRefusedAsUnknown(first, /^isAmbiguous threw TypeError while classifying the activity's Error; counted as ambiguous$/);
    expect((first as ApplicationFailure).details?.[0]).toMatchObject({ outcomeDetail: expect.stringMatching(/cannot read status of undefined/) });
    expect(calls).toBe(1);
  });
});

describe('cancellation', () => {
  it('keeps the claim unknown when the activity is cancelled mid-call (worker shutdown, timeout, workflow cancel)', async () => {
    const attempts = new Attempts();
    let calls = 0;
    const dial = async (_to: string): Promise<string> => {
      calls++;
      await Context.current().cancelled;
      return 'unreachable';
    };
    const attempt = attempts.attempt('dial', 1);
    const running = failureOf(() => attempt.run(dial, '+15550001'));
    await expect.poll(() => calls).toBe(1);

    attempt.cancel();

    expectRefusedAsUnknown(await running, /^cancelled while running \(CANCELLED\); the activity threw CancelledFailure$/);
    expectRefusedAsUnknown(await failureOf(() => attempts.attempt('dial', 2).run(dial, '+15550001')), /cancelled while running/);
    expect(calls).toBe(1);
  });

  it('lets NotSentError win over a cancellation: the claim is released and the retry calls', async () => {
    const attempts = new Attempts();
    let calls = 0;
    const dial = async (_to: string): Promise<string> => {
      if (++calls > 1) return 'dialled';
      await Context.current().cancelled.catch(() => undefined);
      throw new NotSentError('shutting down before dialling');
    };
    const attempt = attempts.attempt('dial', 1);
    const running = errorOf(() => attempt.run(dial, '+15550001'));
    await expect.poll(() => calls).toBe(1);

    attempt.cancel();

    expect(await running).toBeInstanceOf(NotSentError);
    expect(await attempts.store.claims()).toEqual([]);
    await expect(attempts.attempt('dial', 2).run(dial, '+15550001')).resolves.toBe('dialled');
    expect(calls).toBe(2);
  });

  it('never starts the activity when cancelled while the claim is being taken, and gives the claim back', async () => {
    const attempts = new Attempts();
    let calls = 0;
    const dial = async (_to: string) => `dialled (${++calls})`;
    const claimTaken = attempts.store.stall('begin');
    const attempt = attempts.attempt('dial', 1);
    const running = errorOf(() => attempt.run(dial, '+15550001'));
    await expect.poll(() => attempts.store.asked.get('begin')).toBe(1);

    attempt.cancel();
    claimTaken();

    expect(await running).toBeInstanceOf(CancelledFailure);
    expect(calls).toBe(0);
    expect(await attempts.store.claims()).toEqual([]);
    await expect(attempts.attempt('dial', 2).run(dial, '+15550001')).resolves.toBe('dialled (1)');
  });
});

describe('async completion', () => {
  it('rethrows CompleteAsyncError and keeps the claim, so a repeat refuses until an operator resolves it', async () => {
    const { first, second, calls, claimsBetween } = await throwThenRetry(new CompleteAsyncError());
    expect(first).toBeInstanceOf(CompleteAsyncError);
    expect(claimsBetween).toMatchObject([{ state: 'unknown', outcomeNote: expect.stringMatching(/completes asynchronously/) }]);
    expectRefusedAsUnknown(second, /completes asynchronously/);
    expect(calls).toBe(1);
  });
});

describe('a result that cannot be encoded', () => {
  it('refuses non-retryably and keeps the claim unknown: the call happened, its result cannot be carried', async () => {
    const attempts = new Attempts();
    let calls = 0;
    const quote = async (_item: string): Promise<unknown> => {
      calls++;
      return { total: 10n };
    };

    const refusal = await failureOf(() => attempts.attempt('quote', 1).run(quote, 'sku-1'));

    expectRefusedAsUnknown(refusal, /^the call succeeded but its result could not be encoded/);
    expectRefusedAsUnknown(await failureOf(() => attempts.attempt('quote', 2).run(quote, 'sku-1')), /could not be encoded/);
    expect(calls).toBe(1);
    expect(await attempts.store.onlyClaim()).toMatchObject({ state: 'unknown' });
  });
});

describe('the store fails after the call', () => {
  it('returns the result when it cannot be recorded, and keeps the claim, so a later attempt refuses rather than repeats', async () => {
    const attempts = new Attempts({ recordRetryMs: 200, leaseMs: LEASE_MS });
    let calls = 0;
    const chargeCard = async (_orderId: string) => `ch_${++calls}`;
    attempts.store.fail('complete');

    await expect(attempts.attempt('chargeCard', 1).run(chargeCard, 'o-1')).resolves.toBe('ch_1');

    expect(attempts.store.asked.get('complete')).toBeGreaterThan(1);
    expect(attempts.logged('ERROR', /could not record the result in time; trying on in the background/)).toHaveLength(1);
    expect(await attempts.store.onlyClaim()).toMatchObject({ state: 'claimed', attempt: 1 });
    attempts.clock.advance(LEASE_MS);
    const refusal = await failureOf(() => attempts.attempt('chargeCard', 2).run(chargeCard, 'o-1'));
    expect(refusal.type).toBe(IdempotencyOrphanedClaim);
    expect(calls).toBe(1);

    // The store comes back: the record is written after all, and a later attempt is answered from it.
    attempts.store.heal('complete');
    await expect.poll(async () => (await attempts.store.onlyClaim()).state, { timeout: 5_000 }).toBe('completed');
    await expect(attempts.attempt('chargeCard', 3).run(chargeCard, 'o-1')).resolves.toBe('ch_1');
    expect(calls).toBe(1);
  });

  it('records the result when the store comes back within recordRetryMs', async () => {
    const attempts = new Attempts({ recordRetryMs: 5_000 });
    const chargeCard = async (_orderId: string) => 'ch_1';
    attempts.store.fail('complete', undefined, 2);

    await expect(attempts.attempt('chargeCard', 1).run(chargeCard, 'o-1')).resolves.toBe('ch_1');

    expect(attempts.store.asked.get('complete')).toBe(3);
    expect(await attempts.store.onlyClaim()).toMatchObject({ state: 'completed' });
  });

  it('keeps the claim when it cannot be released after a definite error: later attempts refuse, never repeat', async () => {
    const attempts = new Attempts({ recordRetryMs: 200, leaseMs: LEASE_MS, maxWaitMs: 300 });
    attempts.store.fail('release');
    const { first, second, calls } = await throwThenRetry(new Error('card declined'), attempts);
    expect((first as Error).message).toBe('card declined');
    expect(attempts.logged('ERROR', /could not release the claim/)).toHaveLength(1);
    // The retry came while the owner's lease still held: it waited for an outcome that never came.
    expect((second as ApplicationFailure).type).toBe(IdempotencyClaimBusy);
    attempts.clock.advance(LEASE_MS);
    expect((await failureOf(() => attempts.attempt('sendSms', 3).run(async () => 'sent', '+15550001'))).type).toBe(IdempotencyOrphanedClaim);
    expect(calls).toBe(1);
  });

  it('refuses even when the unknown outcome cannot be recorded: the claim stays without one', async () => {
    const attempts = new Attempts({ recordRetryMs: 200, leaseMs: LEASE_MS });
    attempts.store.fail('markUnknown');
    let calls = 0;
    const placeCall = async (): Promise<string> => {
      calls++;
      throw new OutcomeUnknownError('line dropped');
    };

    expect((await failureOf(() => attempts.attempt('placeCall', 1).run(placeCall))).type).toBe(IdempotencyOrphanedClaim);

    expect(attempts.logged('ERROR', /could not mark the outcome unknown/)).toHaveLength(1);
    expect(await attempts.store.onlyClaim()).toMatchObject({ state: 'claimed' });
    attempts.clock.advance(LEASE_MS);
    expect((await failureOf(() => attempts.attempt('placeCall', 2).run(placeCall))).type).toBe(IdempotencyOrphanedClaim);
    expect(calls).toBe(1);
  });

  it('does not record over a claim an operator changed while the call ran, and says so', async () => {
    const attempts = new Attempts();
    const call = callInFlight<string>();
    const chargeCard = async (_orderId: string) => call.body();
    const running = attempts.attempt('chargeCard', 1).run(chargeCard, 'o-1');
    await expect.poll(call.started).toBe(true);
    const held = await attempts.store.onlyClaim();
    await attempts.store.release(held); // `temporal-idempotency release --force`, as the store sees it

    call.finish('ch_1');

    await expect(running).resolves.toBe('ch_1');
    expect(attempts.logged('WARN', /the claim was changed by someone else while the call ran; did not record its result/)).toHaveLength(1);
    expect(await attempts.store.claims()).toEqual([]);
  });
});
