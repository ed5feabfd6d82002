/**
 * What the interceptor needs from a claim store, independent of Postgres.
 */
import type { Payload } from '@temporalio/common';
import type { KeySalt } from '../key/index.js';
import type { AuditLedger } from './audit-ledger.js';

/**
 * Whether a row's record may be obeyed: `verified` (its MAC checks under a secret held here),
 * `not-checked` (unsigned, where unsigned rows are obeyed: no signing secret here, or `'unsigned'`
 * among the previous ones), `unverifiable` (signed by a secret not held here, or unsigned where
 * signatures are required), `rejected` (its MAC fails under the secret it names, which is held here).
 */
export type Authenticity = 'verified' | 'not-checked' | 'unverifiable' | 'rejected';

export type ClaimState = 'claimed' | 'completed' | 'unknown';

/** Who claims a key, and for which action. Recorded with the claim for the people who read refusals. */
export interface ClaimRequest {
  readonly key: string;
  /** Hash of the semantic arguments, to catch one key reused for a different action. */
  readonly fingerprint: string;
  /** Whether an audit ledger records the call made under this claim (`temporal-idempotency ledger` says when none does). */
  readonly audited?: boolean;
  /**
   * On a call `resumable()` makes in a refused call's place after an operator's decision, the refused
   * call's key: a claim under it answers this call (its record decides). Never claimed under.
   */
  readonly refusedKey?: string | undefined;
  readonly namespace: string;
  readonly activityType: string;
  readonly workflowId: string | null;
  readonly runId: string | null;
  readonly activityId: string;
  readonly attempt: number;
  /** The worker process, e.g. `host-3/4711`. */
  readonly claimedBy: string;
  /**
   * How long from now the claiming attempt may still be running (its start-to-close timeout plus a
   * grace); null when unknown. Before then, operators need `--force` to release or resolve it.
   */
  readonly deadlineMs: number | null;
  /**
   * The canonical text of the semantic arguments (what `fingerprint` hashes), encoded with the
   * worker's converter and codecs, kept for the operator who checks the vendor; absent when the
   * activity type does not record them.
   */
  readonly arguments?: Payload | null;
}

export interface Claim extends Omit<ClaimRequest, 'deadlineMs' | 'refusedKey' | 'arguments' | 'audited'> {
  /** Whether an audit ledger records the call made under this claim. */
  readonly audited: boolean;
  readonly state: ClaimState;
  /** Held only by the caller that inserted the claim; guards complete, release and markUnknown. */
  readonly token: string;
  readonly claimedAt: Date;
  readonly finishedAt: Date | null;
  /** The recorded result, present exactly when the state is `completed`. */
  readonly result: Payload | null;
  /** Why the outcome is unknown, in words safe to show anywhere (no error text). */
  readonly outcomeNote: string | null;
  /** The full note (error texts may carry user data), as a payload through the worker's codec. */
  readonly outcomeDetail: Payload | null;
  /** Until when the owning worker's lease holds (database clock); null for claims without a lease. */
  readonly leaseExpiresAt: Date | null;
  /** Whether the lease held when the row was read, judged by the database's clock, never a worker's. */
  readonly ownerAlive: boolean;
  /** When the claiming attempt's own time is up (database clock); null when unknown. */
  readonly deadlineAt: Date | null;
  /** The database's clock when the row was read, to time waits against the lease. */
  readonly readAt: Date;
  /** Whether the row's record may be obeyed, judged by the reader's record secrets. */
  readonly authenticity: Authenticity;
  /** The record secret whose MAC the row carries; null for an unsigned row. */
  readonly signedBy: string | null;
}

/** Why an outcome is unknown: a summary safe to show anywhere, and the full text as an encoded payload. */
export interface OutcomeNote {
  readonly summary: string;
  readonly detail: Payload | null;
}

/** A workflow that was refused on a key and may wait for an operator's decision on it. */
export interface Waiter {
  readonly key: string;
  readonly namespace: string;
  readonly workflowId: string;
  readonly runId: string | null;
  readonly activityType: string;
}

/** The key's claim as it was once a refused workflow was noted as waiting on it. */
export interface WaiterNoted {
  /** `completed`: the outcome came meanwhile (a paused owner recorded it), so the refused call can be answered. Null: no claim. */
  readonly claimState: ClaimState | null;
}

/** A claim this process holds and keeps alive. */
export interface HeldClaim {
  readonly key: string;
  readonly token: string;
}

export type BeginResult =
  /** This caller inserted the claim and may run the activity. */
  | { readonly won: true; readonly claim: Claim }
  /** Someone claimed the key (or the refused key it resumes) before; the caller must not run the activity. */
  | { readonly won: false; readonly claim: Claim };

export interface ClaimStore {
  /**
   * The salt keys and fingerprints are hashed under: the same for every worker on this store, and
   * never changed (a new salt would give every call a new key).
   */
  keySalt(): Promise<KeySalt>;
  /**
   * Inserts a claim, durably, with a lease of `leaseMs`, unless one exists for the key or for the
   * refused key it resumes; returns whichever claim now holds it.
   */
  begin(request: ClaimRequest, leaseMs: number): Promise<BeginResult>;
  /**
   * Extends the leases of all the given claims in one statement; returns the tokens it extended.
   * A held token missing from the answer lost its claim (an operator released or resolved it).
   */
  renewLeases(claims: readonly HeldClaim[], leaseMs: number): Promise<readonly string[]>;
  /** Records the result of the caller's own claim. False when the claim is no longer the caller's to complete. */
  complete(claim: Claim, result: Payload): Promise<boolean>;
  /** Deletes the caller's own claim: the action did not happen. */
  release(claim: Claim): Promise<boolean>;
  /** Marks the caller's own claim as having an unknown outcome; later attempts refuse. */
  markUnknown(claim: Claim, note: OutcomeNote): Promise<boolean>;
  /**
   * Takes over an orphaned claim (outcome `unknown`, or `claimed` by a dead owner) for `request`,
   * with a new token and the taker's identity, to re-run an action the vendor dedups, or to ask the
   * vendor about it (then `note` says what call it asks about, for whoever finds the claim if the
   * taker dies asking). Null when someone else changed it first.
   */
  takeOver(orphan: Claim, request: ClaimRequest, leaseMs: number, note?: OutcomeNote): Promise<Claim | null>;
  /**
   * Gives a claim the caller took over (to ask the vendor) back as the orphan it was: the orphan's
   * token, attempt, worker, times and workflow, its outcome `unknown` with `note`. For an attempt
   * whose question was cut short: it called nothing, so the claim must go on naming the call that
   * was made. False when the claim is no longer the caller's.
   */
  handBack(taken: Claim, orphan: Claim, note: OutcomeNote): Promise<boolean>;
  /**
   * Records that a workflow was refused on `waiter.key`, so an operator's decision reaches it, and
   * flags the claim so that whoever records its outcome later learns someone waits. Resolves with the
   * claim's state as it was then: completed or gone (null), nobody waits, and the waiter is not recorded.
   */
  addWaiter(waiter: Waiter): Promise<WaiterNoted>;
  /**
   * The claim on `key` as it is now (null: none): to learn whether a write whose answer was lost took
   * effect, and, read again and again, how an earlier attempt that still holds the key ended.
   */
  get(key: string): Promise<Claim | null>;
  /**
   * After `complete` recorded, or `release` deleted, the caller's claim: the workflows refused on its
   * key that were not told of an outcome since, for the caller to tell them. Empty at once when nobody
   * was refused on it.
   */
  waitersToTell(claim: HeldClaim): Promise<readonly Waiter[]>;
  /** Notes that these waiters of `key` were told its outcome (or are closed): `prune` counts from now. */
  waitersTold(key: string, waiters: readonly Pick<Waiter, 'namespace' | 'workflowId'>[]): Promise<void>;
  // What follows is optional: each is a capability some stores have, never a step of the protocol.
  /** The audit ledger kept beside the claims, when this store has one. */
  auditLedger?(): AuditLedger;
}
