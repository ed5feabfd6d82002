/**
 * Keeps this process's claims alive while their activities run: one batched
 * renewal statement per interval for all of them, not one per activity. If the
 * process dies, or loses Postgres, the leases lapse and later attempts see a
 * dead owner.
 *
 * Claims are tracked by token, not by key: after a takeover two attempts may
 * hold (old and new) tokens for one key, and one dropping its claim must not
 * stop renewing the other's.
 */
import type { ClaimStore, HeldClaim } from '../store/index.js';

/** Renew three times per lease, so one slow or failed renewal does not let a live owner look dead. */
const RENEWALS_PER_LEASE = 3;

interface Held {
  readonly claim: HeldClaim;
  /** Called once, when a renewal shows the claim is no longer this attempt's. */
  readonly lost: () => void;
}

export class LeaseKeeper {
  private readonly held = new Map<string, Held>();
  private timer: NodeJS.Timeout | undefined;
  private renewing = false;

  constructor(
    private readonly store: ClaimStore,
    readonly leaseMs: number,
    private readonly onRenewalError: (error: unknown) => void,
  ) {}

  hold(claim: HeldClaim, lost: () => void = () => undefined): void {
    this.held.set(claim.token, { claim, lost });
    this.timer ??= setInterval(() => void this.renew(), this.leaseMs / RENEWALS_PER_LEASE).unref();
  }

  drop(token: string): void {
    this.held.delete(token);
    if (this.held.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  /** How many claims this keeper renews right now. */
  get size(): number {
    return this.held.size;
  }

  private async renew(): Promise<void> {
    // A renewal still in flight is not stacked with another; each one is bounded by the store's timeout,
    // so a renewal stuck on a half-open socket ends and the next one runs on a fresh connection.
    if (this.renewing || this.held.size === 0) return;
    this.renewing = true;
    const sent = [...this.held.values()];
    try {
      const renewed = new Set(await this.store.renewLeases(sent.map((held) => held.claim), this.leaseMs));
      for (const held of sent) {
        if (renewed.has(held.claim.token) || this.held.get(held.claim.token) !== held) continue;
        this.held.delete(held.claim.token); // lost for good: a token never comes back
        held.lost();
      }
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
