/**
 * Waiting for an earlier attempt that still holds the claim (Temporal timed it
 * out, its worker did not die): heartbeating, bounded, and cheap on Postgres.
 *
 * While notifications flow, a waiter re-reads only when one arrives or when the
 * owner's lease would lapse (a dead owner announces nothing); it polls every
 * `pollMs` only while the LISTEN connection is down. Whatever NOTIFY says (any
 * role that can connect can send one), it re-reads at most every
 * MIN_REREAD_MS.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Claim, ClaimWatch } from '../store/index.js';
import { ATTRIBUTES, SPAN_NAMES, inChildSpan } from './tracing.js';

/** The fastest a waiter re-reads the claim, however many notifications arrive. */
export const MIN_REREAD_MS = 200;
/** Re-read a little after the lease would lapse, so the read sees it lapsed. */
const LEASE_MARGIN_MS = 50;
/** How often a waiting attempt heartbeats; the SDK throttles it further to the heartbeat timeout. */
const HEARTBEAT_EVERY_MS = 1_000;

export type WaitOutcome =
  /** The claim now has an outcome, or its owner died: decide from it. */
  | { readonly kind: 'settled'; readonly claim: Claim }
  /** The claim was released: claim the key again. */
  | { readonly kind: 'released' }
  /** The wait ran out (or the attempt was cancelled) with the owner still running. */
  | { readonly kind: 'busy'; readonly claim: Claim };

export interface WaitBounds {
  /** Local clock: when this attempt stops waiting. */
  readonly deadline: number;
  /** Poll interval while notifications are not flowing. */
  readonly pollMs: number;
  /** The attempt's cancellation: a cancelled attempt stops waiting at once. */
  readonly signal: AbortSignal;
  readonly heartbeat: () => void;
}

/** In its own span when traced: how long the attempt waited, and how the wait ended. */
export function waitForOwner(watch: ClaimWatch, read: () => Promise<Claim | null>, bounds: WaitBounds): Promise<WaitOutcome> {
  return inChildSpan(SPAN_NAMES.wait, () => waitForOutcome(watch, read, bounds), (outcome) => ({ [ATTRIBUTES.waitOutcome]: outcome.kind }));
}

async function waitForOutcome(watch: ClaimWatch, read: () => Promise<Claim | null>, bounds: WaitBounds): Promise<WaitOutcome> {
  bounds.heartbeat();
  const heartbeats = setInterval(bounds.heartbeat, HEARTBEAT_EVERY_MS);
  const aborted = new Promise<void>((resolve) => bounds.signal.addEventListener('abort', () => resolve(), { once: true }));
  try {
    for (let lastRead = 0; ; ) {
      await sleep(Math.max(0, lastRead + MIN_REREAD_MS - Date.now()));
      lastRead = Date.now();
      const current = await read();
      if (current === null) return { kind: 'released' };
      if (current.state !== 'claimed' || !current.ownerAlive) return { kind: 'settled', claim: current };
      const left = bounds.deadline - Date.now();
      if (left <= 0 || bounds.signal.aborted) return { kind: 'busy', claim: current };
      await Promise.race([watch.changed(Math.min(nextReadIn(current, watch.notifying, bounds.pollMs), left)), aborted]);
    }
  } finally {
    clearInterval(heartbeats);
  }
}

/** Until the owner's lease would lapse (by the database's clock) while notified; else the poll interval. */
function nextReadIn(claim: Claim, notifying: boolean, pollMs: number): number {
  if (!notifying || claim.leaseExpiresAt === null) return pollMs;
  return Math.max(pollMs, claim.leaseExpiresAt.getTime() - claim.readAt.getTime() + LEASE_MARGIN_MS);
}
