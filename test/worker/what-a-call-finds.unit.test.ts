/**
 * Every row of README "What a call finds", one attempt at a time, through
 * MockActivityEnvironment with the interceptors on the in-memory store: what
 * the attempt answers, whether the activity was called, and what the claim
 * says afterwards. No services.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { DefaultLogger } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import {
  ClaimContendedError,
  IdempotencyClaimBusy,
  IdempotencyKeyReuse,
  IdempotencyOrphanedClaim,
  IdempotencyRecordRejected,
  IdempotencyRecordUnverifiable,
  IdempotencyResultUndecodable,
  IdempotencyStoreUnavailable,
  OutcomeUnknownError,
} from '../../src/index.js';
import type { RefusalDetails } from '../../src/index.js';
import { IdempotentActivityEnvironment } from '../../src/testing/index.js';
import { XorCodec } from '../support/codecs.js';
import { Attempts, HUNG_LEASE_MS, callInFlight, connectionRefused, failureOf, runningTransfer, waitingOnRunningOwner } from '../support/unit-attempts.js';

const LEASE_MS = 30_000;
const order = { orderId: 'o-42', amountCents: 1999 };
const resultIn = (claim: { result: Parameters<typeof defaultPayloadConverter.fromPayload>[0] | null }) =>
  claim.result ? defaultPayloadConverter.fromPayload(claim.result) : undefined;

/** One workflow's attempts at chargeCard, which charges (and counts) each time it is called. */
function charges() {
  const attempts = new Attempts();
  let calls = 0;
  const chargeCard = async (_order: typeof order) => `charged (${++calls})`;
  const run = (attempt: number) => attempts.attempt('chargeCard', attempt).run(chargeCard, order);
  return { attempts, calls: () => calls, run, refusalOf: (attempt: number) => failureOf(() => run(attempt)) };
}

describe('nothing: the first attempt', () => {
  it('claims the key, calls the activity once, records its result and returns it', async () => {
    const attempts = new Attempts();
    let calls = 0;
    const chargeCard = async (_order: typeof order) => ({ chargeId: `ch_${++calls}` });

    await expect(attempts.attempt('chargeCard', 1).run(chargeCard, order)).resolves.toEqual({ chargeId: 'ch_1' });

    expect(calls).toBe(1);
    const claim = await attempts.store.onlyClaim();
    expect(claim).toMatchObject({ state: 'completed', activityType: 'chargeCard', workflowId: 'order-42', attempt: 1 });
    expect(resultIn(claim)).toEqual({ chargeId: 'ch_1' });
  });
});

describe('completed: it already happened', () => {
  it.each([
    ['an object', { chargeId: 'ch_1', amountCents: 1999 }],
    ['undefined', undefined],
    ['bytes', new Uint8Array([0, 1, 2, 255])],
    ['a large object', { lines: Array.from({ length: 5_000 }, (_, i) => ({ line: i, text: 'x'.repeat(20) })) }],
  ])('answers a repeat with the recorded result, %s exactly, without calling the activity', async (_, value) => {
    const attempts = new Attempts();
    let calls = 0;
    const chargeCard = async (_order: typeof order) => {
      calls++;
      return value;
    };
    await attempts.attempt('chargeCard', 1).run(chargeCard, order);

    const repeat = await attempts.attempt('chargeCard', 2).run(chargeCard, order);

    expect(repeat).toEqual(value);
    if (value instanceof Uint8Array) expect(repeat).toBeInstanceOf(Uint8Array);
    expect(calls).toBe(1);
    expect(await attempts.store.onlyClaim()).toMatchObject({ state: 'completed', attempt: 1 });
  });

  it('keys other arguments apart: another action runs', async () => {
    const attempts = new Attempts();
    let calls = 0;
    const chargeCard = async (charge: typeof order) => `charged ${charge.amountCents} (${++calls})`;
    await attempts.attempt('chargeCard', 1).run(chargeCard, order);
    await expect(attempts.attempt('chargeCard', 1).run(chargeCard, { ...order, amountCents: 5 })).resolves.toBe('charged 5 (2)');
    expect(calls).toBe(2);
    expect(await attempts.store.claims()).toHaveLength(2);
  });
});

describe('completed, other arguments under the same custom key', () => {
  it('refuses with non-retryable IdempotencyKeyReuse and does not call the activity', async () => {
    const attempts = new Attempts({ activities: { chargeCard: { key: ({ args }) => `charge:${(args[0] as typeof order).orderId}` } } });
    let calls = 0;
    const chargeCard = async (charge: typeof order) => `charged ${charge.amountCents} (${++calls})`;
    await attempts.attempt('chargeCard', 1).run(chargeCard, order);

    const refusal = await failureOf(() => attempts.attempt('chargeCard', 1).run(chargeCard, { ...order, amountCents: 1 }));

    expect(refusal.type).toBe(IdempotencyKeyReuse);
    expect(refusal.nonRetryable).toBe(true);
    expect(refusal.message).toMatch(/already belongs to a different action/);
    expect((refusal.details?.[0] as RefusalDetails).reason).toBe('key-reuse');
    expect(calls).toBe(1);
    expect(resultIn(await attempts.store.onlyClaim())).toBe('charged 1999 (1)');
  });
});

describe('claimed, owner alive: an earlier attempt still runs', () => {
  it('waits, heartbeating with the details the running attempt left, and answers with its result', async () => {
    const attempts = new Attempts();
    const { first, owner, transfer, calls } = await runningTransfer(attempts);

    const waiter = attempts.attempt('transfer', 2, { heartbeatDetails: { page: 3 } });
    const heartbeats: unknown[] = [];
    waiter.on('heartbeat', (details: unknown) => heartbeats.push(details));
    const waiting = waiter.run(transfer, 100);
    await expect.poll(() => heartbeats.length).toBeGreaterThan(0);
    first.finish('transferred');

    await expect(waiting).resolves.toBe('transferred');
    await expect(owner).resolves.toBe('transferred');
    expect(calls()).toBe(1);
    expect(heartbeats.every((details) => JSON.stringify(details) === '{"page":3}')).toBe(true);
    expect(await attempts.store.onlyClaim()).toMatchObject({ state: 'completed', attempt: 1 });
  });

  it('runs the activity for real when the owner ends in a definite error (its claim released)', async () => {
    const attempts = new Attempts();
    const first = callInFlight<string>();
    let calls = 0;
    const transfer = async (_amount: number) => (++calls === 1 ? first.body() : 'transferred by attempt 2');
    const owner = attempts.attempt('transfer', 1).run(transfer, 100);
    await expect.poll(first.started).toBe(true);
    const waiter = attempts.attempt('transfer', 2);
    let heartbeats = 0;
    waiter.on('heartbeat', () => heartbeats++);
    const waiting = waiter.run(transfer, 100);
    await expect.poll(() => heartbeats).toBeGreaterThan(0);

    first.fail(new Error('card declined'));

    await expect(owner).rejects.toThrow('card declined');
    await expect(waiting).resolves.toBe('transferred by attempt 2');
    expect(calls).toBe(2);
    expect(await attempts.store.onlyClaim()).toMatchObject({ state: 'completed', attempt: 2 });
  });

  it('fails with retryable IdempotencyClaimBusy when the wait runs out, and leaves the claim to its owner', async () => {
    const attempts = new Attempts({ maxWaitMs: 300 });
    const { first, owner, transfer, calls } = await runningTransfer(attempts);

    const busy = await failureOf(() => attempts.attempt('transfer', 2).run(transfer, 100));

    expect(busy.type).toBe(IdempotencyClaimBusy);
    expect(busy.nonRetryable).toBe(false);
    expect((busy.details?.[0] as RefusalDetails)).toMatchObject({ reason: 'owner-running', attempt: 1, refusedAttempt: 2 });
    expect(calls()).toBe(1);
    expect(await attempts.store.onlyClaim()).toMatchObject({ state: 'claimed', attempt: 1, ownerAlive: true });
    first.finish('transferred');
    await owner;
  });

  it('stops waiting when its own start-to-close timeout is near, whatever maxWaitMs says', async () => {
    const attempts = new Attempts({ maxWaitMs: 60_000 });
    const first = callInFlight<string>();
    const transfer = async (_amount: number) => first.body();
    const owner = attempts.attempt('transfer', 1).run(transfer, 100);
    await expect.poll(first.started).toBe(true);
    const started = Date.now();

    // One second before the attempt's own timeout is the last moment its answer still counts.
    const busy = await failureOf(() => attempts.attempt('transfer', 2, { startToCloseTimeoutMs: 1_500 }).run(transfer, 100));

    expect(busy.type).toBe(IdempotencyClaimBusy);
    expect(Date.now() - started).toBeLessThan(1_500);
    first.finish('transferred');
    await owner;
  });

  it('stops waiting, busy, when the waiting attempt is cancelled', async () => {
    const attempts = new Attempts();
    const first = callInFlight<string>();
    const transfer = async (_amount: number) => first.body();
    const owner = attempts.attempt('transfer', 1).run(transfer, 100);
    await expect.poll(first.started).toBe(true);
    const waiter = attempts.attempt('transfer', 2);
    let heartbeats = 0;
    waiter.on('heartbeat', () => heartbeats++);
    const waiting = failureOf(() => waiter.run(transfer, 100));
    await expect.poll(() => heartbeats).toBeGreaterThan(0);

    waiter.cancel();

    expect((await waiting).type).toBe(IdempotencyClaimBusy);
    first.finish('transferred');
    await owner;
  });

  it('refuses once the owner dies while it waits: its lease lapses, and the refusal is IdempotencyOrphanedClaim', async () => {
    const attempts = new Attempts({ leaseMs: LEASE_MS });
    const { first, owner, waiting, calls } = await waitingOnRunningOwner(attempts);

    attempts.clock.advance(LEASE_MS);

    const refusal = await waiting;
    expect(refusal.type).toBe(IdempotencyOrphanedClaim);
    expect((refusal.details?.[0] as RefusalDetails).reason).toBe('owner-died');
    expect(calls()).toBe(1);
    first.finish('transferred');
    await owner;
  });
});

describe("claimed, owner alive past its attempt's deadline: the call hangs", () => {
  it('refuses with non-retryable IdempotencyOrphanedClaim, reason owner-hung, at once instead of waiting; the owner keeps its claim', async () => {
    const attempts = new Attempts({ leaseMs: HUNG_LEASE_MS });
    const first = callInFlight<string>();
    let calls = 0;
    const transfer = async (_amount: number) => {
      calls++;
      return first.body();
    };
    // Claimed at 03:04:05 with a 1 s start-to-close timeout: its deadline is 30 s of grace later.
    const owner = attempts.attempt('transfer', 1, { startToCloseTimeoutMs: 1_000 }).run(transfer, 100);
    await expect.poll(first.started).toBe(true);
    const hung = await attempts.passDeadline();
    expect(hung).toMatchObject({ state: 'claimed', ownerAlive: true, deadlineAt: new Date('2030-01-02T03:04:36.000Z') });

    const refusal = await failureOf(() => attempts.attempt('transfer', 2).run(transfer, 100));

    expect(refusal.type).toBe(IdempotencyOrphanedClaim);
    expect(refusal.nonRetryable).toBe(true);
    expect(refusal.message).toMatch(/recorded no outcome by its attempt's deadline \(2030-01-02T03:04:36\.000Z\), though its worker still renews its lease/);
    expect(refusal.message).toContain(`\`npx temporal-idempotency release ${hung.key}\`. Both need --force, and only once that worker is stopped`);
    // No "retry": the refusal is non-retryable, and what comes next depends on the workflow.
    expect(refusal.message).toMatch(/\. A workflow waiting in resumable\(\) then goes on by itself; reset any other to before this call\.$/);
    expect(refusal.details?.[0]).toMatchObject({ key: hung.key, reason: 'owner-hung', attempt: 1, claimedBy: hung.claimedBy, refusedAttempt: 2 });
    expect(attempts.logged('INFO', /an earlier attempt still runs; waiting for its outcome/)).toEqual([]);
    expect(calls).toBe(1);
    expect(await attempts.store.onlyClaim()).toMatchObject({ state: 'claimed', attempt: 1, token: hung.token });
    expect(await attempts.store.waitersOf(hung.key)).toEqual([
      { key: hung.key, namespace: 'test', workflowId: 'order-42', runId: 'run-1', activityType: 'transfer' },
    ]);

    // The hung call lands after all: its result is recorded, and a later attempt answers with it.
    first.finish('transferred');
    await expect(owner).resolves.toBe('transferred');
    await expect(attempts.attempt('transfer', 3).run(transfer, 100)).resolves.toBe('transferred');
    expect(calls).toBe(1);
  });
});

describe('claimed, owner dead: the worker died between the call and the record', () => {
  it('refuses with non-retryable IdempotencyOrphanedClaim naming the claim, and notes the workflow as waiting', async () => {
    const attempts = new Attempts({ leaseMs: LEASE_MS });
    const first = callInFlight<string>();
    let calls = 0;
    const placeCall = async (_to: string) => {
      calls++;
      return first.body();
    };
    const owner = attempts.attempt('placeCall', 1).run(placeCall, '+15550001');
    await expect.poll(first.started).toBe(true);
    attempts.clock.advance(LEASE_MS);

    const refusal = await failureOf(() => attempts.attempt('placeCall', 2).run(placeCall, '+15550001'));

    expect(refusal.type).toBe(IdempotencyOrphanedClaim);
    expect(refusal.nonRetryable).toBe(true);
    const claim = await attempts.store.onlyClaim();
    expect(refusal.message).toContain(`Refusing to run placeCall again: attempt 1 on worker ${claim.claimedBy} claimed key ${claim.key}`);
    expect(refusal.message).toMatch(/recorded no outcome; its worker stopped renewing its lease/);
    expect(refusal.details?.[0]).toMatchObject({
      key: claim.key,
      activityType: 'placeCall',
      workflowId: 'order-42',
      attempt: 1,
      claimedBy: claim.claimedBy,
      claimedAt: '2030-01-02T03:04:05.000Z',
      reason: 'owner-died',
      refusedAttempt: 2,
    });
    expect(calls).toBe(1);
    expect(claim).toMatchObject({ state: 'claimed', ownerAlive: false });
    expect(await attempts.store.waitersOf(claim.key)).toEqual([
      { key: claim.key, namespace: 'test', workflowId: 'order-42', runId: 'run-1', activityType: 'placeCall' },
    ]);
    first.finish('answered');
    await owner;
  });

  it('still refuses when the refused workflow cannot be noted as waiting, and logs why', async () => {
    const attempts = new Attempts({ leaseMs: LEASE_MS });
    const first = callInFlight<string>();
    const placeCall = async (_to: string) => first.body();
    const owner = attempts.attempt('placeCall', 1).run(placeCall, '+15550001');
    await expect.poll(first.started).toBe(true);
    attempts.clock.advance(LEASE_MS);
    attempts.store.fail('addWaiter');

    expect((await failureOf(() => attempts.attempt('placeCall', 2).run(placeCall, '+15550001'))).type).toBe(IdempotencyOrphanedClaim);
    expect(attempts.logged('ERROR', /could not note the refused workflow as waiting/)).toHaveLength(1);
    first.finish('answered');
    await owner;
  });

  it('answers from the record instead of refusing when the owner, only paused, records its outcome while the refusal is noted', async () => {
    const attempts = new Attempts({ leaseMs: LEASE_MS });
    const first = callInFlight<string>();
    let calls = 0;
    const placeCall = async (_to: string) => {
      calls++;
      return first.body();
    };
    const owner = attempts.attempt('placeCall', 1).run(placeCall, '+15550001');
    await expect.poll(first.started).toBe(true);
    attempts.clock.advance(LEASE_MS); // no renewal for a lease: a GC pause, or a frozen VM
    const noted = attempts.store.stall('addWaiter');
    const late = attempts.attempt('placeCall', 2).run(placeCall, '+15550001');
    await expect.poll(() => attempts.store.asked.get('addWaiter')).toBe(1);

    first.finish('answered'); // the owner comes back and records its result
    await owner;
    noted();

    await expect(late).resolves.toBe('answered');
    expect(calls).toBe(1);
  });

  it('has the owner that records its outcome after a refusal tell the refused workflow, or log how to, here without a client', async () => {
    const attempts = new Attempts({ leaseMs: LEASE_MS });
    const first = callInFlight<string>();
    const placeCall = async (_to: string) => first.body();
    const owner = attempts.attempt('placeCall', 1).run(placeCall, '+15550001');
    await expect.poll(first.started).toBe(true);
    attempts.clock.advance(LEASE_MS);
    expect((await failureOf(() => attempts.attempt('placeCall', 2).run(placeCall, '+15550001'))).type).toBe(IdempotencyOrphanedClaim);

    first.finish('answered');
    await expect(owner).resolves.toBe('answered');

    const { key } = await attempts.store.onlyClaim();
    // MockActivityEnvironment has no Temporal client: the waiter stays on record, untold, for `resume`.
    expect(attempts.logged('ERROR', new RegExp(`run \`temporal-idempotency resume ${key}\``))).toHaveLength(1);
    expect((await attempts.store.waitersOf(key)).map((waiter) => waiter.workflowId)).toEqual(['order-42']);
  });
});

describe('unknown: the activity said its outcome is ambiguous', () => {
  it('refuses this attempt and every later one with non-retryable IdempotencyOrphanedClaim; the activity ran once', async () => {
    const attempts = new Attempts();
    let calls = 0;
    const placeCall = async (to: string): Promise<string> => {
      calls++;
      throw new OutcomeUnknownError(`the line to ${to} dropped after dialling`);
    };

    const first = await failureOf(() => attempts.attempt('placeCall', 1).run(placeCall, '+15550001'));
    const second = await failureOf(() => attempts.attempt('placeCall', 2).run(placeCall, '+15550001'));

    for (const refusal of [first, second]) {
      expect(refusal.type).toBe(IdempotencyOrphanedClaim);
      expect(refusal.nonRetryable).toBe(true);
      expect(refusal.message).toMatch(/marked its outcome unknown \(the activity threw OutcomeUnknownError\)/);
      expect((refusal.details?.[0] as RefusalDetails).reason).toBe('outcome-unknown');
    }
    // No payload codec on this worker: the note's full text (the error's message) is in the details.
    expect((second.details?.[0] as RefusalDetails).outcomeDetail).toMatch(/dropped after dialling/);
    expect(calls).toBe(1);
    expect(await attempts.store.onlyClaim()).toMatchObject({ state: 'unknown', outcomeNote: 'the activity threw OutcomeUnknownError' });
  });

  it('keeps the note out of the refusal on a worker with payload codecs (the SDK logs details in plain text)', async () => {
    const attempts = new Attempts({ payloadCodecs: [new XorCodec()] });
    const placeCall = async (): Promise<string> => {
      throw new OutcomeUnknownError('the line to +15550001 dropped');
    };
    await failureOf(() => attempts.attempt('placeCall', 1).run(placeCall));
    const refusal = await failureOf(() => attempts.attempt('placeCall', 2).run(placeCall));
    expect((refusal.details?.[0] as RefusalDetails).outcomeDetail).toBeNull();
    expect(JSON.stringify(refusal.details)).not.toContain('+15550001');
  });
});

describe('store unreachable before the call: nothing ran', () => {
  it('fails with retryable IdempotencyStoreUnavailable, naming the failure by its code, and never calls the activity', async () => {
    const attempts = new Attempts();
    let calls = 0;
    const chargeCard = async (_order: typeof order) => `charged (${++calls})`;
    attempts.store.fail('begin');

    const refusal = await failureOf(() => attempts.attempt('chargeCard', 1).run(chargeCard, order));

    expect(refusal.type).toBe(IdempotencyStoreUnavailable);
    expect(refusal.nonRetryable).toBe(false);
    expect(refusal.message).toMatch(/could not record a claim for key [0-9a-f]{64} \(connection refused \[ECONNREFUSED\]/);
    expect(refusal.message).not.toContain('10.1.2.3');
    expect(refusal.details?.[0]).toMatchObject({ reason: 'store-unavailable', claimedBy: null, attempt: 1 });
    expect(calls).toBe(0);
    expect(await attempts.store.claims()).toEqual([]);

    attempts.store.heal('begin');
    await expect(attempts.attempt('chargeCard', 2).run(chargeCard, order)).resolves.toBe('charged (1)');
    expect(calls).toBe(1);
  });

  it('fails the same way when the store cannot follow a running owner, and never calls the activity', async () => {
    const attempts = new Attempts();
    const { first, owner, transfer, calls } = await runningTransfer(attempts);
    attempts.store.fail('get');

    const refusal = await failureOf(() => attempts.attempt('transfer', 2).run(transfer, 100));

    expect(refusal.type).toBe(IdempotencyStoreUnavailable);
    expect(refusal.nonRetryable).toBe(false);
    expect(calls()).toBe(1);
    first.finish('transferred');
    await owner;
  });

  it('fails the same way when the store fails while it waits on a running owner; the owner keeps its claim and its answer', async () => {
    const attempts = new Attempts();
    const { first, owner, waiting, transfer, calls } = await waitingOnRunningOwner(attempts);
    expect(attempts.store.asked.get('get')).toBeGreaterThanOrEqual(1);

    // Postgres goes away while the waiter follows the owner: its next read of the claim fails.
    attempts.store.fail('get');

    const refusal = await waiting;
    expect(refusal.type).toBe(IdempotencyStoreUnavailable);
    expect(refusal.nonRetryable).toBe(false);
    expect(refusal.message).toMatch(/^Did not run transfer \(attempt 2\).*\(connection refused \[ECONNREFUSED\]/);
    expect(refusal.message).not.toContain('10.1.2.3');
    expect(await attempts.store.onlyClaim()).toMatchObject({ state: 'claimed', attempt: 1 });

    attempts.store.heal('get');
    first.finish('transferred');
    await expect(owner).resolves.toBe('transferred');
    await expect(attempts.attempt('transfer', 3).run(transfer, 100)).resolves.toBe('transferred');
    expect(calls()).toBe(1);
  });

  it('fails before any key exists when the store cannot give its key salt, naming no key', async () => {
    const { attempts, calls, refusalOf, run } = charges();
    attempts.store.fail('keySalt', connectionRefused(), 1);

    const refusal = await refusalOf(1);

    expect(refusal.type).toBe(IdempotencyStoreUnavailable);
    expect(refusal.nonRetryable).toBe(false);
    expect(refusal.message).toMatch(/could not record a claim for key \(none yet\) \(connection refused \[ECONNREFUSED\]/);
    expect(refusal.details?.[0]).toMatchObject({ key: '(none yet)', reason: 'store-unavailable', activityType: 'chargeCard', attempt: 1 });
    expect(attempts.store.asked.get('begin')).toBeUndefined();
    expect(calls()).toBe(0);

    await expect(run(2)).resolves.toBe('charged (1)');
  });

  it('fails retryably when the key changed hands each time the store looked (ClaimContendedError): nothing claimed or called', async () => {
    const { attempts, calls, refusalOf, run } = charges();
    attempts.store.fail('begin', (key: string) => new ClaimContendedError(key, 3), 1);

    const refusal = await refusalOf(1);

    const { key } = refusal.details?.[0] as RefusalDetails;
    expect(refusal.type).toBe(IdempotencyStoreUnavailable);
    expect(refusal.nonRetryable).toBe(false);
    expect(refusal.message).toContain(`(Key ${key} was claimed and released 3 times while this caller tried to claim it; nothing was claimed;`);
    expect(calls()).toBe(0);
    expect(await attempts.store.claims()).toEqual([]);

    await expect(run(2)).resolves.toBe('charged (1)');
  });
});

describe('a record this worker cannot trust or read', () => {
  it('fails retryably with IdempotencyResultUndecodable, naming the encoding, and never calls the activity', async () => {
    const attempts = new Attempts({ payloadCodecs: [new XorCodec()] });
    let calls = 0;
    const chargeCard = async (_order: typeof order) => `charged (${++calls})`;
    await attempts.attempt('chargeCard', 1).run(chargeCard, order);
    // Another worker, on the same claims, without the codec the result was recorded with.
    const withoutCodec = new IdempotentActivityEnvironment({
      store: attempts.store,
      info: { workflowExecution: { workflowId: 'order-42', runId: 'run-1' } },
      mockOptions: { logger: new DefaultLogger('ERROR') },
    });

    const refusal = await failureOf(() => withoutCodec.attempt({ activityType: 'chargeCard', attempt: 2 }).run(chargeCard, order));

    expect(refusal.type).toBe(IdempotencyResultUndecodable);
    expect(refusal.nonRetryable).toBe(false);
    expect(refusal.message).toMatch(/encoding binary\/xor/);
    expect(calls).toBe(1);
    await expect(attempts.attempt('chargeCard', 3).run(chargeCard, order)).resolves.toBe('charged (1)');
  });

  it('refuses a record that does not check with non-retryable IdempotencyRecordRejected: nothing called, nothing answered', async () => {
    const attempts = new Attempts();
    let calls = 0;
    const chargeCard = async (_order: typeof order) => `charged (${++calls})`;
    await attempts.attempt('chargeCard', 1).run(chargeCard, order);
    attempts.store.forgeRecords = 'rejected';

    const refusal = await failureOf(() => attempts.attempt('chargeCard', 2).run(chargeCard, order));

    expect(refusal.type).toBe(IdempotencyRecordRejected);
    expect(refusal.nonRetryable).toBe(true);
    expect(refusal.message).toContain('record secret feedc0de');
    expect(refusal.message).not.toContain('charged');
    expect(refusal.details?.[0]).toMatchObject({ reason: 'record-rejected', signedBy: 'feedc0de' });
    expect(calls).toBe(1);
  });

  it('refuses a record signed by a secret this worker lacks retryably, naming the secret: a rollout in progress', async () => {
    const attempts = new Attempts();
    let calls = 0;
    const chargeCard = async (_order: typeof order) => `charged (${++calls})`;
    await attempts.attempt('chargeCard', 1).run(chargeCard, order);
    attempts.store.forgeRecords = 'unverifiable';

    const refusal = await failureOf(() => attempts.attempt('chargeCard', 2).run(chargeCard, order));

    expect(refusal.type).toBe(IdempotencyRecordUnverifiable);
    expect(refusal.nonRetryable).toBe(false);
    expect(refusal.message).toMatch(/signed by record secret feedc0de, which this worker does not hold.*Give it feedc0de/);
    expect(refusal.message).not.toContain('charged');
    expect(calls).toBe(1);
    // A worker that holds it (here: the store reads the record as it is again) answers from the record.
    attempts.store.forgeRecords = false;
    await expect(attempts.attempt('chargeCard', 3).run(chargeCard, order)).resolves.toBe('charged (1)');
    expect(calls).toBe(1);
  });
});
