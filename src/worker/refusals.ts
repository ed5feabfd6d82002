/**
 * Every refusal is an ApplicationFailure: it lands in the workflow's history
 * and in the Web UI as the activity's failure, with a message a person on call
 * can act on and the claim's facts in `details[0]`.
 */
import { ApplicationFailure } from '@temporalio/common';
import {
  IdempotencyClaimBusy,
  IdempotencyConfiguration,
  IdempotencyResultUndecodable,
  IdempotencyInvalidKeyInput,
  IdempotencyKeyReuse,
  IdempotencyOrphanedClaim,
  IdempotencyRecordRejected,
  IdempotencyRecordUnverifiable,
  IdempotencyStoreUnavailable,
} from '../failure-types.js';
import { errorClass, storeFailureText } from '../error-text.js';
import type { InvalidKeyInputError } from '../key/index.js';
import type { IdempotencyConfigError } from '../errors.js';
import type { Claim, ClaimRequest } from '../store/index.js';

/** The refused attempt, as much of it as a refusal names. */
type Refused = Pick<ClaimRequest, 'attempt' | 'activityType' | 'workflowId' | 'runId' | 'activityId'>;

/**
 * `details[0]` of every refusal. Times are ISO-8601 strings, from the database's clock. The key and the
 * ids are the claim's, as it recorded them (the claiming attempt's; the refused one's are `refused…`).
 */
export interface RefusalDetails extends Pick<ClaimRequest, 'key' | 'activityType' | 'workflowId' | 'runId' | 'activityId'> {
  /** The attempt that claimed the key (not the refused one). */
  readonly attempt: number;
  readonly claimedAt: string | null;
  /** Null when there is no claim (the store could not be reached). */
  readonly claimedBy: string | null;
  /**
   * Which case it was: `owner-died`, `owner-hung`, `outcome-unknown`, `owner-running`, `key-reuse`,
   * `resumed-arguments-changed`, `store-unavailable`, `record-rejected`, `record-unverifiable`,
   * `reconcile-unfinished`, `result-undecodable`.
   */
  readonly reason: string;
  /** The attempt that was refused. */
  readonly refusedAttempt: number;
  /** The workflow whose attempt was refused: another than `workflowId` when a custom key is shared. */
  readonly refusedWorkflowId: string | null;
  readonly refusedRunId: string | null;
  /** The refused activity's id: `resumable()` finds the refused call by it when the closure rethrew the refusal alone. */
  readonly refusedActivityId: string;
  /** Why the outcome is unknown, in words safe to show anywhere (error classes and codes only). */
  readonly outcomeNote?: string | null;
  /**
   * The note with the error's own text, which may carry user data. Only on workers without payload
   * codecs: with codecs it stays in the claim (encoded), because the SDK logs a failed activity's
   * details in plain text; `temporal-idempotency show <key>` decodes it.
   */
  readonly outcomeDetail?: string | null;
  /** For `record-rejected` and `record-unverifiable`: the record secret the row names (null: unsigned). */
  readonly signedBy?: string | null;
}

/**
 * No `cause`: the activity's own error (whose message may carry user data) would follow the refusal
 * into history and into the SDK's "Activity failed" log line. `outcomeDetail` is given only when the
 * worker has no payload codecs (see RefusalDetails).
 */
export function orphanedClaim(claim: Claim, refused: Refused, outcomeDetail: string | null): ApplicationFailure {
  const unknown = claim.state === 'unknown';
  // Claimed with a live lease: refused only once past its attempt's deadline (the call hangs).
  const hung = !unknown && claim.ownerAlive;
  const what = unknown
    ? `marked its outcome unknown${claim.outcomeNote ? ` (${claim.outcomeNote})` : ''}`
    : hung
      ? `recorded no outcome by its attempt's deadline (${claim.deadlineAt?.toISOString() ?? 'unknown'}), though its worker ` +
        `still renews its lease: Temporal gave up on that attempt and the call hangs`
      : `recorded no outcome; its worker stopped renewing its lease, which lapsed at ` +
        `${claim.leaseExpiresAt?.toISOString() ?? 'an unknown time'} (the worker crashed, was killed, or lost Postgres)`;
  return ApplicationFailure.create({
    type: IdempotencyOrphanedClaim,
    nonRetryable: true,
    message:
      `Refusing to run ${claim.activityType} again: ${describeClaim(claim)} and ${what}, so the call may ` +
      `already have gone out. Check the vendor, then, if it happened: \`npx temporal-idempotency resolve ${claim.key} ` +
      `--result '<what ${claim.activityType} returns, as JSON>'\` (the activity's own return value, not the vendor's ` +
      `record); if it did not: \`npx temporal-idempotency release ${claim.key}\`.${forceNeeded(claim, hung)} A workflow ` +
      'waiting in resumable() then goes on by itself; reset any other to before this call.',
    details: [
      { ...detailsOf(claim, refused, unknown ? 'outcome-unknown' : hung ? 'owner-hung' : 'owner-died'), outcomeNote: claim.outcomeNote, outcomeDetail },
    ],
  });
}

export function recordRejected(claim: Claim, refused: Refused): ApplicationFailure {
  return ApplicationFailure.create({
    type: IdempotencyRecordRejected,
    nonRetryable: true,
    message:
      `Refusing to run ${refused.activityType} (attempt ${refused.attempt}): the record of key ${claim.key} ` +
      `(${claim.state}, by worker ${claim.claimedBy}) does not check under record secret ${claim.signedBy}, which ` +
      `signed it: it was written or changed by someone without that secret (forged, copied from another key, or ` +
      `edited). Nothing was called and nothing was answered from it. Find out who can write the claims table (see ` +
      `SECURITY.md) before you release it.`,
    details: [{ ...detailsOf(claim, refused, 'record-rejected'), signedBy: claim.signedBy }],
  });
}

/** Signed by a secret this worker lacks (a rollout in progress), or unsigned where it requires signatures. */
export function recordUnverifiable(claim: Claim, refused: Refused): ApplicationFailure {
  const why =
    claim.signedBy === null
      ? `is unsigned, and this worker requires signed records (it has a record secret): a worker without one wrote ` +
        'it, or someone without the secret did. If the deployment is adopting its first secret, `temporal-idempotency ' +
        "keys re-sign` (with 'unsigned' in the CLI's previousSecrets) signs the rows from before it; otherwise see SECURITY.md"
      : `is signed by record secret ${claim.signedBy}, which this worker does not hold: a secret rotation is under way ` +
        `(or this worker was deployed without the current secret). Give it ${claim.signedBy} (secret or previousSecrets)`;
  return ApplicationFailure.create({
    type: IdempotencyRecordUnverifiable,
    nonRetryable: false,
    message:
      `Did not run ${refused.activityType} (attempt ${refused.attempt}): the record of key ${claim.key} (${claim.state}) ` +
      `${why}. Nothing was called and nothing was answered from it; Temporal will retry.`,
    details: [{ ...detailsOf(claim, refused, 'record-unverifiable'), signedBy: claim.signedBy }],
  });
}

export function claimBusy(claim: Claim, refused: Refused, waitedMs: number): ApplicationFailure {
  return ApplicationFailure.create({
    type: IdempotencyClaimBusy,
    nonRetryable: false,
    message:
      `Did not run ${claim.activityType} (attempt ${refused.attempt}): ${describeClaim(claim)} and is still running ` +
      `on worker ${claim.claimedBy} (lease live until ${claim.leaseExpiresAt?.toISOString()}). Waited ` +
      `${(waitedMs / 1000).toFixed(1)} s for its outcome; Temporal will retry, and the next attempt takes up its outcome.`,
    details: [detailsOf(claim, refused, 'owner-running')],
  });
}

/**
 * The attempt's own time ran out while its reconciler asked the vendor: retryable, like a busy claim
 * (nothing was called, the next attempt takes it up), with the reason saying which case it is.
 */
export function reconcileUnfinished(orphan: Claim, refused: Refused, why: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: IdempotencyClaimBusy,
    nonRetryable: false,
    message:
      `Did not run ${orphan.activityType} (attempt ${refused.attempt}): ${describeClaim(orphan)} with no outcome on record, ` +
      `and this attempt's time ran out while asking the vendor about it (${why}). Nothing was called; Temporal will ` +
      'retry, and the next attempt asks the vendor again.',
    details: [detailsOf(orphan, refused, 'reconcile-unfinished')],
  });
}

export function keyReuse(claim: Claim, refused: Refused): ApplicationFailure {
  return ApplicationFailure.create({
    type: IdempotencyKeyReuse,
    nonRetryable: true,
    message:
      `Refusing to run ${refused.activityType}: key ${claim.key} already belongs to a different action ` +
      `(${describeClaim(claim)} with other arguments). The activity's custom key() maps different arguments ` +
      `to one key; include what distinguishes them in the key.`,
    details: [detailsOf(claim, refused, 'key-reuse')],
  });
}

/**
 * `resumable()` called its closure again after an operator's decision, and the call in the refused
 * call's place has other arguments than the refused call. Rebuilt (a fresh request id, a new time)
 * or another action that took the place: the record cannot tell, so neither a replay of the refused
 * call's outcome nor a fresh call is safe.
 */
export function resumedArgumentsChanged(claim: Claim, refused: Refused): ApplicationFailure {
  return ApplicationFailure.create({
    type: IdempotencyKeyReuse,
    nonRetryable: true,
    message:
      `Refusing to run ${refused.activityType}: resumable() called it again in the place of the refused call ` +
      `(key ${claim.key}, ${describeClaim(claim)}), but with other arguments. If the closure builds a value afresh ` +
      `on each pass (a request id, a time), leave it out of the key with keyArgs, or build it once outside ` +
      `resumable(); if another call took the refused call's place, give each call its own resumable().`,
    details: [detailsOf(claim, refused, 'resumed-arguments-changed')],
  });
}

export function invalidKeyInput(error: InvalidKeyInputError, activityType: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: IdempotencyInvalidKeyInput,
    nonRetryable: true,
    message:
      `Refusing to run ${activityType}: ${error.message} Fix the arguments the workflow passes, or pick ` +
      `the part that defines the action with keyArgs.`,
    details: [{ activityType, path: error.path, reason: error.reason }],
  });
}

/**
 * The store failed before the call. The message and details name the failure by its code alone:
 * a driver's message can carry the database's host and user names, which do not belong in history.
 */
export function storeUnavailable(request: ClaimRequest, cause: unknown): ApplicationFailure {
  return ApplicationFailure.create({
    type: IdempotencyStoreUnavailable,
    nonRetryable: false,
    message:
      `Did not run ${request.activityType} (attempt ${request.attempt}): the idempotency store could not record ` +
      `a claim for key ${request.key} (${storeFailureText(cause)}; the worker's log has the whole error). Nothing was ` +
      `called; Temporal will retry.`,
    details: [
      {
        key: request.key,
        activityType: request.activityType,
        workflowId: request.workflowId,
        runId: request.runId,
        activityId: request.activityId,
        attempt: request.attempt,
        claimedAt: null,
        claimedBy: null,
        reason: 'store-unavailable',
        refusedAttempt: request.attempt,
        refusedWorkflowId: request.workflowId,
        refusedRunId: request.runId,
        refusedActivityId: request.activityId,
      } satisfies RefusalDetails,
    ],
  });
}

export function resultUndecodable(claim: Claim, refused: Refused, cause: unknown): ApplicationFailure {
  const encoding = claim.result?.metadata?.['encoding'];
  const encodingText = encoding ? Buffer.from(encoding).toString('utf8') : 'unknown';
  return ApplicationFailure.create({
    type: IdempotencyResultUndecodable,
    nonRetryable: false,
    message:
      `Did not run ${claim.activityType} again (attempt ${refused.attempt}): ${describeClaim(claim)} and recorded a result, ` +
      `but this worker cannot decode it (encoding ${encodingText}, ${errorClass(cause)}). Give this worker the payload ` +
      `converter and codecs the recording worker had (payloadConverter, payloadCodecs); Temporal will retry.`,
    details: [detailsOf(claim, refused, 'result-undecodable')],
  });
}

export function misconfigured(error: IdempotencyConfigError, activityType: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: IdempotencyConfiguration,
    nonRetryable: true,
    message: `Did not run ${activityType}: ${error.message}`,
    details: [{ activityType, option: error.option }],
    cause: error,
  });
}

/** When an operator needs --force: while the claiming attempt may still be calling (a hung owner, or before its deadline). */
function forceNeeded(claim: Claim, hung: boolean): string {
  if (hung) return ' Both need --force, and only once that worker is stopped: the hung call may still go out.';
  if (claim.state !== 'claimed' || claim.deadlineAt === null || claim.deadlineAt <= claim.readAt) return '';
  return (
    ` Until ${claim.deadlineAt.toISOString()} (the end of that attempt's time) both need --force, and only once you know ` +
    'its worker stopped: a paused worker may still be calling.'
  );
}

function describeClaim(claim: Claim): string {
  return `attempt ${claim.attempt} on worker ${claim.claimedBy} claimed key ${claim.key} at ${claim.claimedAt.toISOString()}`;
}

function detailsOf(claim: Claim, refused: Refused, reason: string): RefusalDetails {
  return {
    key: claim.key,
    activityType: claim.activityType,
    workflowId: claim.workflowId,
    runId: claim.runId,
    activityId: claim.activityId,
    attempt: claim.attempt,
    claimedAt: claim.claimedAt.toISOString(),
    claimedBy: claim.claimedBy,
    reason,
    refusedAttempt: refused.attempt,
    refusedWorkflowId: refused.workflowId,
    refusedRunId: refused.runId,
    refusedActivityId: refused.activityId,
  };
}
