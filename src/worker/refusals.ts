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
  IdempotencyStoreUnavailable,
} from '../failure-types.js';
import { errorText } from '../error-text.js';
import type { InvalidKeyInputError } from '../key/index.js';
import type { IdempotencyConfigError } from './errors.js';
import type { Claim, ClaimRequest } from '../store/index.js';

/** The refused attempt, as much of it as a refusal names. */
type Refused = Pick<ClaimRequest, 'attempt' | 'activityType' | 'workflowId' | 'runId'>;

/** `details[0]` of every refusal. Times are ISO-8601 strings, from the database's clock. */
export interface RefusalDetails {
  readonly key: string;
  readonly activityType: string;
  readonly workflowId: string | null;
  readonly runId: string | null;
  readonly activityId: string;
  /** The attempt that claimed the key (not the refused one). */
  readonly attempt: number;
  readonly claimedAt: string | null;
  /** Null when there is no claim (the store could not be reached). */
  readonly claimedBy: string | null;
  /** Which case it was: `owner-died`, `outcome-unknown`, `owner-running`, `key-reuse`, `store-unavailable`. */
  readonly reason: string;
  /** The attempt that was refused. */
  readonly refusedAttempt: number;
  /** The workflow whose attempt was refused: another than `workflowId` when a custom key is shared. */
  readonly refusedWorkflowId: string | null;
  readonly refusedRunId: string | null;
}

export function orphanedClaim(claim: Claim, refused: Refused, cause?: unknown): ApplicationFailure {
  const unknown = claim.state === 'unknown';
  const what = unknown
    ? `marked its outcome unknown${claim.outcomeNote ? ` (${claim.outcomeNote})` : ''}`
    : `recorded no outcome; its worker stopped renewing its lease, which lapsed at ` +
      `${claim.leaseExpiresAt?.toISOString() ?? 'an unknown time'} (the worker crashed, was killed, or lost Postgres)`;
  return ApplicationFailure.create({
    type: IdempotencyOrphanedClaim,
    nonRetryable: true,
    message:
      `Refusing to run ${claim.activityType} again: ${describeClaim(claim)} and ${what}, so the call may ` +
      `already have gone out. Check the vendor, then \`temporal-idempotency resolve <key> --result JSON\` if it ` +
      `happened or \`temporal-idempotency release <key>\` if it did not, and retry.`,
    details: [detailsOf(claim, refused, unknown ? 'outcome-unknown' : 'owner-died')],
    cause: cause instanceof Error ? cause : undefined,
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

export function invalidKeyInput(error: InvalidKeyInputError, activityType: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: IdempotencyInvalidKeyInput,
    nonRetryable: true,
    message:
      `Refusing to run ${activityType}: ${error.message} Fix the arguments the workflow passes, or pick ` +
      `the part that defines the action with keyArgs.`,
    details: [{ activityType, path: error.path, reason: error.reason }],
    cause: error,
  });
}

export function storeUnavailable(request: ClaimRequest, cause: unknown): ApplicationFailure {
  return ApplicationFailure.create({
    type: IdempotencyStoreUnavailable,
    nonRetryable: false,
    message:
      `Did not run ${request.activityType} (attempt ${request.attempt}): the idempotency store could not record ` +
      `a claim for key ${request.key} (${errorText(cause)}). Nothing was called; Temporal will retry.`,
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
      } satisfies RefusalDetails,
    ],
    cause: cause instanceof Error ? cause : undefined,
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
      `but this worker cannot decode it (encoding ${encodingText}: ${errorText(cause)}). Give this worker the payload ` +
      `converter and codecs the recording worker had (payloadConverter, payloadCodecs); Temporal will retry.`,
    details: [detailsOf(claim, refused, 'result-undecodable')],
    cause: cause instanceof Error ? cause : undefined,
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
  };
}
