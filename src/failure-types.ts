/**
 * The `type` of every ApplicationFailure this library raises. They are what a
 * workflow matches on and what the Temporal Web UI shows for a refused activity.
 */

/** A claim exists with no recorded outcome: the call may have gone out. Non-retryable. */
export const IdempotencyOrphanedClaim = 'IdempotencyOrphanedClaim';
/** An earlier attempt still holds the claim and is running. Retryable. */
export const IdempotencyClaimBusy = 'IdempotencyClaimBusy';
/** The claim store could not be reached before the call; nothing ran. Retryable. */
export const IdempotencyStoreUnavailable = 'IdempotencyStoreUnavailable';
/** The arguments have no stable form to derive a key from. Non-retryable. */
export const IdempotencyInvalidKeyInput = 'IdempotencyInvalidKeyInput';
/** A key was reused for an action with different arguments. Non-retryable. */
export const IdempotencyKeyReuse = 'IdempotencyKeyReuse';
/** The worker's idempotency options are wrong; the activity did not run. Non-retryable. */
export const IdempotencyConfiguration = 'IdempotencyConfiguration';
/**
 * The recorded result cannot be decoded by this worker (a codec not deployed here, a rotated key).
 * Retryable: deploying the right codec heals it; the activity is not called meanwhile.
 */
export const IdempotencyResultUndecodable = 'IdempotencyResultUndecodable';
/**
 * The record does not check under the record secret it names, which this worker holds (forged,
 * copied from another key, or edited by someone without the secret). Non-retryable: nothing was
 * called or answered.
 */
export const IdempotencyRecordRejected = 'IdempotencyRecordRejected';
/**
 * The record is signed by a record secret this worker does not hold (or is unsigned, where this
 * worker requires signatures): a secret rollout in progress. Retryable: a worker given that secret
 * answers it; nothing was called or answered meanwhile.
 */
export const IdempotencyRecordUnverifiable = 'IdempotencyRecordUnverifiable';

export const IDEMPOTENCY_FAILURE_TYPES = [
  IdempotencyOrphanedClaim,
  IdempotencyClaimBusy,
  IdempotencyStoreUnavailable,
  IdempotencyInvalidKeyInput,
  IdempotencyKeyReuse,
  IdempotencyConfiguration,
  IdempotencyResultUndecodable,
  IdempotencyRecordRejected,
  IdempotencyRecordUnverifiable,
] as const;

export type IdempotencyFailureType = (typeof IDEMPOTENCY_FAILURE_TYPES)[number];
