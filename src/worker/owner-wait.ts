/**
 * Waiting for an earlier attempt that still holds the claim (Temporal timed it
 * out, its worker did not die): heartbeating, bounded, and polling. One read of
 * one row by primary key every `pollMs` (a quarter of the lease, at most a
 * second) is cheap, and it is the same path whether Postgres just restarted,
 * a proxy sits in between, or the owner died without a word. A read that does
 * not answer (a half-open connection after a failover) is given up on at the
 * wait's deadline, or at once when the attempt is cancelled: the attempt ends
 * busy (retryable, nothing called) instead of waiting on it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Claim } from '../store/index.js';
import { ATTRIBUTES, SPAN_NAMES, inChildSpan } from './tracing.js';

/** How often a waiting attempt heartbeats; the SDK throttles it further to the heartbeat timeout. */
const HEARTBEAT_EVERY_MS = 1_000;
/**
 * How long past the wait's deadline a read may still answer: the last read goes out at the deadline. Less
 * than the second the deadline keeps before the start-to-close timeout, so the answer still counts.
 */
const READ_GRACE_MS = 500;
/** The longest a Node timer waits; a longer delay fires after 1 ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** A read given up on: out of time, or the attempt cancelled. */
const GAVE_UP = Symbol('gave up');

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

/** In its own span when traced: how long the attempt waited, and how the wait ended. `found`: the claim as the attempt found it. */
export function waitForOwner(found: Claim, read: () => Promise<Claim | null>, bounds: WaitBounds): Promise<WaitOutcome> {
  return inChildSpan(SPAN_NAMES.wait, () => waitForOutcome(found, read, bounds), (outcome) => ({ [ATTRIBUTES.waitOutcome]: outcome.kind }));
}

async function waitForOutcome(found: Claim, read: () => Promise<Claim | null>, bounds: WaitBounds): Promise<WaitOutcome> {
  bounds.heartbeat();
  const heartbeats = setInterval(bounds.heartbeat, HEARTBEAT_EVERY_MS);
  try {
    for (let last = found; ; ) {
      const current = await readWithin(read, bounds);
      // The read did not answer in time, or the attempt was cancelled: the owner still runs, as last read.
      if (current === GAVE_UP) return { kind: 'busy', claim: last };
      if (current === null) return { kind: 'released' };
      if (current.state !== 'claimed' || !current.ownerAlive) return { kind: 'settled', claim: current };
      last = current;
      const left = bounds.deadline - Date.now();
      if (left <= 0 || bounds.signal.aborted) return { kind: 'busy', claim: current };
      // Rejects (AbortError) when the attempt is cancelled: then the next read, at once, ends the wait.
      await sleep(Math.min(bounds.pollMs, left), undefined, { signal: bounds.signal }).catch(() => undefined);
    }
  } finally {
    clearInterval(heartbeats);
  }
}

/** The claim as `read` answers, or GAVE_UP once the wait's deadline (and a grace) passed or the attempt was cancelled. */
function readWithin(read: () => Promise<Claim | null>, { deadline, signal }: WaitBounds): Promise<Claim | null | typeof GAVE_UP> {
  if (signal.aborted) return Promise.resolve(GAVE_UP);
  return new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', giveUp);
    };
    const giveUp = () => {
      done();
      resolve(GAVE_UP);
    };
    const timer = setTimeout(giveUp, Math.min(MAX_TIMER_MS, Math.max(0, deadline - Date.now()) + READ_GRACE_MS));
    signal.addEventListener('abort', giveUp, { once: true });
    // Given up on, a read that answers (or fails) later is ignored.
    read().then(
      (claim) => {
        done();
        resolve(claim);
      },
      (error: unknown) => {
        done();
        reject(error);
      },
    );
  });
}
