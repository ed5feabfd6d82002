/**
 * Waiting for an earlier attempt that still holds the claim (Temporal timed it
 * out, its worker did not die): heartbeating, bounded, and polling. One read of
 * one row by primary key every `pollMs` (a quarter of the lease, at most a
 * second) is cheap, and it is the same path whether Postgres just restarted,
 * a proxy sits in between, or the owner died without a word.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Claim } from '../store/index.js';
import { ATTRIBUTES, SPAN_NAMES, inChildSpan } from './tracing.js';

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
  /** How long to wait between reads. */
  readonly pollMs: number;
  /** The attempt's cancellation: a cancelled attempt stops waiting at once. */
  readonly signal: AbortSignal;
  readonly heartbeat: () => void;
}

/** In its own span when traced: how long the attempt waited, and how the wait ended. */
export function waitForOwner(read: () => Promise<Claim | null>, bounds: WaitBounds): Promise<WaitOutcome> {
  return inChildSpan(SPAN_NAMES.wait, () => waitForOutcome(read, bounds), (outcome) => ({ [ATTRIBUTES.waitOutcome]: outcome.kind }));
}

async function waitForOutcome(read: () => Promise<Claim | null>, bounds: WaitBounds): Promise<WaitOutcome> {
  bounds.heartbeat();
  const heartbeats = setInterval(bounds.heartbeat, HEARTBEAT_EVERY_MS);
  try {
    for (;;) {
      const current = await read();
      if (current === null) return { kind: 'released' };
      if (current.state !== 'claimed' || !current.ownerAlive) return { kind: 'settled', claim: current };
      const left = bounds.deadline - Date.now();
      if (left <= 0 || bounds.signal.aborted) return { kind: 'busy', claim: current };
      // Rejects (AbortError) when the attempt is cancelled: then the next read, at once, ends the wait.
      await sleep(Math.min(bounds.pollMs, left), undefined, { signal: bounds.signal }).catch(() => undefined);
    }
  } finally {
    clearInterval(heartbeats);
  }
}
