/**
 * What the interceptor needs from a claim store, independent of Postgres.
 */
import type { Payload } from '@temporalio/common';
import type { AuditLedger } from './audit-ledger.js';

export type ClaimState = 'claimed' | 'completed' | 'unknown';

/** Who claims a key, and for which action. Recorded with the claim for the people who read refusals. */
export interface ClaimRequest {
  readonly key: string;
  /** Hash of the semantic arguments, to catch one key reused for a different action. */
  readonly fingerprint: string;
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
}

export interface Claim extends Omit<ClaimRequest, 'deadlineMs'> {
  readonly state: ClaimState;
  /** Held only by the caller that inserted the claim; guards complete, release and markUnknown. */
  readonly token: string;
  readonly claimedAt: Date;
  readonly finishedAt: Date | null;
  /** The recorded result, present exactly when the state is `completed`. */
  readonly result: Payload | null;
  /** Why the outcome is unknown, when it is. */
  readonly outcomeNote: string | null;
  /** Until when the owning worker's lease holds (database clock); null for claims without a lease. */
  readonly leaseExpiresAt: Date | null;
  /** Whether the lease held when the row was read, judged by the database's clock, never a worker's. */
  readonly ownerAlive: boolean;
  /** When the claiming attempt's own time is up (database clock); null when unknown. */
  readonly deadlineAt: Date | null;
  /** The database's clock when the row was read, to time waits against the lease. */
  readonly readAt: Date;
}

/** A workflow that was refused on a key and may wait for an operator's decision on it. */
export interface Waiter {
  readonly key: string;
  readonly namespace: string;
  readonly workflowId: string;
  readonly runId: string | null;
  readonly activityType: string;
}

/** A claim this process holds and keeps alive. */
export interface HeldClaim {
  readonly key: string;
  readonly token: string;
}

/** Follows one key while an earlier attempt still runs. */
export interface ClaimWatch {
  /** The claim as it is now; null once it was released. */
  current(): Promise<Claim | null>;
  /** Resolves true when the claim may have changed, false when `timeoutMs` passed first. */
  changed(timeoutMs: number): Promise<boolean>;
  /** Whether changes are announced right now; when not, the caller must poll. */
  readonly notifying: boolean;
  close(): void;
}

export type BeginResult =
  /** This caller inserted the claim and may run the activity. */
  | { readonly won: true; readonly claim: Claim }
  /** Someone claimed the key before; the caller must not run the activity. */
  | { readonly won: false; readonly claim: Claim };

export interface ClaimStore {
  /**
   * Inserts a claim, durably, with a lease of `leaseMs`, unless one exists for the key;
   * returns whichever claim now holds it.
   */
  begin(request: ClaimRequest, leaseMs: number): Promise<BeginResult>;
  /**
   * Extends the leases of all the given claims in one statement; returns the tokens it extended.
   * A held token missing from the answer lost its claim (an operator released or resolved it).
   */
  renewLeases(claims: readonly HeldClaim[], leaseMs: number): Promise<readonly string[]>;
  /** Starts following a key whose claim is held by someone else. */
  watch(key: string): Promise<ClaimWatch>;
  /** Records the result of the caller's own claim. False when the claim is no longer the caller's to complete. */
  complete(key: string, token: string, result: Payload): Promise<boolean>;
  /** Deletes the caller's own claim: the action did not happen. */
  release(key: string, token: string): Promise<boolean>;
  /** Marks the caller's own claim as having an unknown outcome; later attempts refuse. */
  markUnknown(key: string, token: string, note: string): Promise<boolean>;
  /**
   * Takes over an orphaned claim (outcome `unknown`, or `claimed` by a dead owner) for `request`,
   * with a new token and the taker's identity, to re-run an action the vendor dedups. Null when
   * someone else changed it first.
   */
  takeOver(orphan: Claim, request: ClaimRequest, leaseMs: number): Promise<Claim | null>;
  /** Records that a workflow was refused on `waiter.key`, so an operator's decision reaches it. */
  addWaiter(waiter: Waiter): Promise<void>;
  /** The audit ledger kept beside the claims, when this store has one. */
  auditLedger?(): AuditLedger;
}
