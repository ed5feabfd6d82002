/**
 * Matching a refusal in workflow code: an activity call that failed with one of
 * this library's failure types, directly or as the ActivityFailure's cause.
 * Sandbox-safe.
 */
import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import { IDEMPOTENCY_FAILURE_TYPES } from '../failure-types.js';
import type { IdempotencyFailureType } from '../failure-types.js';

/** The refusal inside `error` (an ActivityFailure or the ApplicationFailure itself), if it is one. */
export function idempotencyRefusalOf(error: unknown): (ApplicationFailure & { readonly type: IdempotencyFailureType }) | undefined {
  const failure = error instanceof ActivityFailure ? error.cause : error;
  if (!(failure instanceof ApplicationFailure)) return undefined;
  return (IDEMPOTENCY_FAILURE_TYPES as readonly (string | null | undefined)[]).includes(failure.type)
    ? (failure as ApplicationFailure & { readonly type: IdempotencyFailureType })
    : undefined;
}

/** Whether `error` is a refusal, of `type` when given: `isIdempotencyRefusal(err, IdempotencyOrphanedClaim)`. */
export function isIdempotencyRefusal(error: unknown, type?: IdempotencyFailureType): boolean {
  const refusal = idempotencyRefusalOf(error);
  return refusal !== undefined && (type === undefined || refusal.type === type);
}
