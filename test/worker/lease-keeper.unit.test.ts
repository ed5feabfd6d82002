/**
 * The lease keeper after a renewal that hangs or fails (issue 9 item 10): the
 * next renewal still goes out and the leases stay alive. The Postgres store
 * bounds its own renewal with a query timeout; a custom `ClaimStore` may not,
 * so the keeper must not wait on one renewal forever. On the in-memory store,
 * with fake timers (leases and renewal intervals move together). No services.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { HeldClaim } from '../../src/store/index.js';
import { InMemoryClaimStore } from '../../src/testing/index.js';
import { LeaseKeeper } from '../../src/worker/lease-keeper.js';
import { claimRequest } from '../support/claims.js';

const LEASE_MS = 3_000;
const INTERVAL_MS = LEASE_MS / 3;

/** An in-memory store whose renewals the test scripts: each entry of `plan` is how the next renewal behaves. */
class ScriptedRenewals extends InMemoryClaimStore {
  renewals = 0;
  constructor(private readonly plan: ReadonlyArray<'hang' | 'fail' | 'slow'>) {
    super();
  }

  override renewLeases(claims: readonly HeldClaim[], leaseMs: number): Promise<readonly string[]> {
    const step = this.plan[this.renewals++];
    if (step === 'hang') return new Promise(() => undefined); // never settles
    if (step === 'fail') return Promise.reject(new Error('connection terminated unexpectedly'));
    if (step === 'slow') return new Promise((resolve) => setTimeout(resolve, LEASE_MS * 10, [])); // answers long after its lease
    return super.renewLeases(claims, leaseMs);
  }
}

async function heldClaim(store: InMemoryClaimStore) {
  const request = claimRequest();
  const { won, claim } = await store.begin(request, LEASE_MS);
  expect(won).toBe(true);
  return { key: request.key, claim };
}

const ownerAlive = async (store: InMemoryClaimStore, key: string) => (await store.get(key))?.ownerAlive;

describe('LeaseKeeper after a stuck or failed renewal', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it.each(['hang', 'slow'] as const)(
    'renews again after a renewal that %ss, and keeps the lease alive well past its length',
    async (step) => {
      const store = new ScriptedRenewals([step]);
      const errors: unknown[] = [];
      const keeper = new LeaseKeeper(store, LEASE_MS, (error) => errors.push(error));
      const { key, claim } = await heldClaim(store);
      keeper.hold(claim);
      await vi.advanceTimersByTimeAsync(INTERVAL_MS); // the first renewal goes out and sticks
      expect(store.renewals).toBe(1);
      for (let elapsed = INTERVAL_MS; elapsed < LEASE_MS * 4; elapsed += INTERVAL_MS / 2) {
        await vi.advanceTimersByTimeAsync(INTERVAL_MS / 2);
        expect(await ownerAlive(store, key), `owner alive ${elapsed + INTERVAL_MS / 2} ms after the claim`).toBe(true);
      }
      expect(store.renewals).toBeGreaterThanOrEqual(10);
      // The stuck renewal is reported (the worker logs it), once, not silently waited on.
      expect(errors).toHaveLength(1);
      expect(String((errors[0] as Error).message)).toMatch(/renewing .*did not answer within/);
      keeper.drop(claim.token);
    },
  );

  it('renews at the next interval after a renewal that failed, and reports the failure', async () => {
    const store = new ScriptedRenewals(['fail']);
    const errors: unknown[] = [];
    const keeper = new LeaseKeeper(store, LEASE_MS, (error) => errors.push(error));
    const { key, claim } = await heldClaim(store);
    keeper.hold(claim);
    await vi.advanceTimersByTimeAsync(LEASE_MS * 4);
    expect(await ownerAlive(store, key)).toBe(true);
    expect(store.renewals).toBeGreaterThanOrEqual(11);
    expect(errors.map((error) => (error as Error).message)).toEqual(['connection terminated unexpectedly']);
    keeper.drop(claim.token);
  });

  it('does not stack renewals while one is still within its bound', async () => {
    let inFlight = 0;
    let most = 0;
    const store = new (class extends InMemoryClaimStore {
      override async renewLeases(claims: readonly HeldClaim[], leaseMs: number): Promise<readonly string[]> {
        most = Math.max(most, ++inFlight);
        await new Promise((resolve) => setTimeout(resolve, INTERVAL_MS * 0.9)); // slow, but within the interval
        inFlight--;
        return super.renewLeases(claims, leaseMs);
      }
    })();
    const keeper = new LeaseKeeper(store, LEASE_MS, () => undefined);
    const { key, claim } = await heldClaim(store);
    keeper.hold(claim);
    await vi.advanceTimersByTimeAsync(LEASE_MS * 4);
    expect(most).toBe(1);
    expect(await ownerAlive(store, key)).toBe(true);
    keeper.drop(claim.token);
  });

  it('still tells the holder its claim is gone after a renewal that hung', async () => {
    const store = new ScriptedRenewals(['hang']);
    const keeper = new LeaseKeeper(store, LEASE_MS, () => undefined);
    const { key, claim } = await heldClaim(store);
    let lost = 0;
    keeper.hold(claim, () => lost++);
    await vi.advanceTimersByTimeAsync(INTERVAL_MS); // stuck
    await store.release(claim); // an operator released it meanwhile
    expect(await store.get(key)).toBeNull();
    await vi.advanceTimersByTimeAsync(LEASE_MS);
    expect(lost).toBe(1);
    expect(keeper.size).toBe(0);
  });
});
