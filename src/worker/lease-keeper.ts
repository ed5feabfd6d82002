/**
 * Keeps this process's claims alive while their activities run: one batched
 * renewal statement per interval for all of them, not one per activity. If the
 * process dies, or loses Postgres, the leases lapse and later attempts see a
 * dead owner.
 */
import type { ClaimStore, HeldClaim } from '../store/index.js';

/** Renew three times per lease, so one slow or failed renewal does not let a live owner look dead. */
const RENEWALS_PER_LEASE = 3;

export class LeaseKeeper {
  private readonly held = new Map<string, HeldClaim>();
  private timer: NodeJS.Timeout | undefined;
  private renewing = false;

  constructor(
    private readonly store: ClaimStore,
    readonly leaseMs: number,
    private readonly onRenewalError: (error: unknown) => void,
  ) {}

  hold(claim: HeldClaim): void {
    this.held.set(claim.key, claim);
    this.timer ??= setInterval(() => void this.renew(), this.leaseMs / RENEWALS_PER_LEASE).unref();
  }

  drop(key: string): void {
    this.held.delete(key);
    if (this.held.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private async renew(): Promise<void> {
    // A renewal still in flight (Postgres slow or gone) is not stacked with another.
    if (this.renewing || this.held.size === 0) return;
    this.renewing = true;
    try {
      await this.store.renewLeases([...this.held.values()], this.leaseMs);
    } catch (error) {
      this.onRenewalError(error);
    } finally {
      this.renewing = false;
    }
  }
}

const keepers = new WeakMap<ClaimStore, Map<number, LeaseKeeper>>();

/** One keeper per store and lease length in this process, shared by every worker that uses them. */
export function leaseKeeperFor(store: ClaimStore, leaseMs: number, onRenewalError: (error: unknown) => void): LeaseKeeper {
  const byLease = keepers.get(store) ?? new Map<number, LeaseKeeper>();
  keepers.set(store, byLease);
  let keeper = byLease.get(leaseMs);
  if (!keeper) {
    keeper = new LeaseKeeper(store, leaseMs, onRenewalError);
    byLease.set(leaseMs, keeper);
  }
  return keeper;
}
