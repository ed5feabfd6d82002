/**
 * Keeps a worker's claims alive while their activities run: one batched
 * renewal statement per interval for all of them, not one per activity. If the
 * process dies, or loses Postgres, the leases lapse and later attempts see a
 * dead owner.
 *
 * Claims are tracked by token, not by key: after a takeover two attempts may
 * hold (old and new) tokens for one key, and one dropping its claim must not
 * stop renewing the other's.
 */
import { IdempotencyError } from '../errors.js';
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
    // A renewal still in flight is not stacked with another. The Postgres store bounds its own statement,
    // but a custom store may not, so the wait is bounded here too: after one interval the renewal is
    // abandoned (its late answer ignored) and the next goes out at once, before the lease can lapse.
    if (this.renewing || this.held.size === 0) return;
    this.renewing = true;
    const sent = [...this.held.values()];
    let renewed: ReadonlySet<string>;
    try {
      renewed = new Set(await this.bounded(this.store.renewLeases(sent.map((held) => held.claim), this.leaseMs)));
    } catch (error) {
      this.renewing = false;
      this.onRenewalError(error);
      if (error instanceof RenewalTimedOut) void this.renew();
      return;
    }
    this.renewing = false;
    for (const held of sent) {
      if (renewed.has(held.claim.token) || this.held.get(held.claim.token) !== held) continue;
      this.held.delete(held.claim.token); // lost for good: a token never comes back
      held.lost();
    }
  }

  /** `renewal`, or a `RenewalTimedOut` once one interval has passed without an answer. */
  private bounded<T>(renewal: Promise<T>): Promise<T> {
    const limitMs = this.leaseMs / RENEWALS_PER_LEASE;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      // Unref'd: a renewal in flight must not keep a stopping process alive.
      timer = setTimeout(() => reject(new RenewalTimedOut(limitMs)), limitMs).unref();
    });
    void renewal.catch(() => undefined); // an abandoned renewal's late failure is not unhandled
    return Promise.race([renewal, timedOut]).finally(() => clearTimeout(timer));
  }
}

/** A renewal the store did not answer within one renewal interval (reported to the worker's log, not thrown to a caller). */
class RenewalTimedOut extends IdempotencyError {
  override readonly name = 'RenewalTimedOut';
  readonly code = 'lease-renewal-timeout';
  constructor(limitMs: number) {
    super(`renewing claim leases did not answer within ${Math.round(limitMs)} ms; sending the next renewal now`);
  }
}
