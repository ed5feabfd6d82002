/**
 * The in-memory store of `temporal-idempotency/testing`: the ClaimStore contract
 * that PostgresClaimStore keeps too, on a clock the test moves, and what only
 * it does (waking waiters when time jumps, refusing bad clocks).
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { beforeEach, describe, expect, it } from 'vitest';
import { IdempotencyConfigError, InvalidArgumentError } from '../../src/index.js';
import { InMemoryClaimStore, ManualClock } from '../../src/testing/index.js';
import { claimRequest as request } from '../support/claims.js';
import { describeClaimStoreContract } from '../store/claim-store-contract.js';

let clock: ManualClock;
let store: InMemoryClaimStore;
beforeEach(() => {
  clock = new ManualClock(new Date('2030-01-02T03:04:05.000Z'));
  store = new InMemoryClaimStore({ clock });
});

describeClaimStoreContract('InMemoryClaimStore', () => ({
  store,
  // One process: every worker of a unit test shares the one store.
  connections: async (count) => ({ stores: Array.from({ length: count }, () => store), close: async () => undefined }),
  elapse: async (ms) => clock.advance(ms),
  now: async () => new Date(clock.now()),
  waitersOf: (key) => store.waitersOf(key),
  recordedArguments: (key) => store.recordedArguments(key),
}));

describe('InMemoryClaimStore on its own', () => {
  it('keeps leases by the clock it is given, whatever the real time', async () => {
    const { claim } = await store.begin(request({ deadlineMs: 5_000 }), 1_000);
    expect(claim.claimedAt.toISOString()).toBe('2030-01-02T03:04:05.000Z');
    clock.advance(999);
    expect((await store.get(claim.key))?.ownerAlive).toBe(true);
    clock.advance(1);
    expect((await store.get(claim.key))?.ownerAlive).toBe(false);
    expect(claim.deadlineAt?.toISOString()).toBe('2030-01-02T03:04:10.000Z');
  });

  it('hands out copies: changing a returned claim changes nothing in the store', async () => {
    const { claim } = await store.begin(request(), 30_000);
    await store.complete(claim, defaultPayloadConverter.toPayload({ chargeId: 'ch_1' }));
    const read = (await store.get(claim.key))!;
    (read as { state: string }).state = 'claimed';
    read.result!.data![0] = 0;
    const again = await store.get(claim.key);
    expect(again?.state).toBe('completed');
    expect(defaultPayloadConverter.fromPayload(again!.result!)).toEqual({ chargeId: 'ch_1' });
  });

  it('lists every claim, for a test to see what its activities left', async () => {
    const first = await store.begin(request(), 30_000);
    const second = await store.begin(request(), 30_000);
    await store.release(first.claim);
    expect((await store.claims()).map((claim) => claim.key)).toEqual([second.claim.key]);
  });

  it('names what is wrong with a clock or a lease it cannot use, as an error of the library', async () => {
    const badClock = () => new InMemoryClaimStore({ clock: {} as ManualClock });
    expect(badClock).toThrow(IdempotencyConfigError);
    expect(badClock).toThrow(/clock must have a now\(\)/);
    const badLease = store.begin(request(), Number.NaN);
    await expect(badLease).rejects.toThrow(InvalidArgumentError);
    await expect(badLease).rejects.toThrow(/leaseMs must be a finite number of milliseconds, 0 or more; got NaN/);
    expect(() => clock.advance(-1)).toThrow(InvalidArgumentError);
    expect(() => clock.advance(-1)).toThrow(/ManualClock.advance\(ms\) needs a finite number of milliseconds, 0 or more; got -1/);
    expect(() => new ManualClock(Number.NaN)).toThrow(/start must be a Date or milliseconds/);
  });

  it('answers for an absent claim\'s arguments with the error the operator API gives', async () => {
    await expect(store.recordedArguments('no-such-key')).rejects.toThrow(/No claim for key no-such-key/);
  });
});
