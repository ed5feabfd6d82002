/** Why an operator's request about a claim was refused; the CLI maps each to an exit code. */
import type { Claim } from './claim-store.js';
import { IdempotencyError } from '../errors.js';

export class ClaimNotFoundError extends IdempotencyError {
  override readonly name = 'ClaimNotFoundError';
  readonly code = 'claim-not-found';
  constructor(
    readonly key: string,
    /** What else is known, and what to do. */
    detail = '`temporal-idempotency list` shows the claims there are.',
  ) {
    super(`No claim for key ${key}${detail.startsWith('and') ? ` ${detail}` : `. ${detail}`}`);
  }
}

export type ChangeRefusal =
  /** The claim already has a recorded result; it cannot be resolved or released again. */
  | 'completed'
  /** The owner's lease is live: its call may be in flight right now. */
  | 'owner-alive'
  /** The lease lapsed, but the attempt's own time is not up: a paused owner may still be calling. */
  | 'before-deadline'
  /** `resume` needs an outcome on record (completed, or released); this claim has none yet. */
  | 'no-outcome'
  /** The record does not check under the secrets given, or is signed by one the CLI lacks: it may be forged. */
  | 'not-authentic'
  /** `release-absent` of a key that has a claim: `release` it, which checks the claim. */
  | 'has-claim';

export class ClaimChangeRefusedError extends IdempotencyError {
  override readonly name = 'ClaimChangeRefusedError';
  readonly code = 'claim-change-refused';
  constructor(
    readonly reason: ChangeRefusal,
    readonly claim: Claim | undefined,
    message: string,
  ) {
    super(message);
  }
}

/** Raised when a record would be written unsigned into a deployment whose workers require signatures. */
export class SecretRequiredError extends IdempotencyError {
  override readonly name = 'SecretRequiredError';
  readonly code = 'secret-required';
}

/** Why a change to `claim` is refused, or undefined when it may go ahead. */
export function changeRefusal(
  claim: Claim,
  action: 'resolve' | 'release',
  force: boolean,
  distrust: readonly string[] = [],
): ClaimChangeRefusedError | undefined {
  // A completed record that fails under the secret it names, or that a leaked secret signed (named in --distrust), is no
  // outcome: a person may replace it. One the CLI merely cannot check (it lacks the secret) may well be genuine.
  const untrusted = claim.authenticity === 'rejected' || (claim.signedBy !== null && distrust.includes(claim.signedBy));
  if (claim.state === 'completed' && untrusted && !force) {
    return new ClaimChangeRefusedError(
      'not-authentic',
      claim,
      `Key ${claim.key} is completed, but its record is not to be trusted (signed by ${claim.signedBy ?? 'no secret'}): ` +
        `check the vendor, then ${action} it with --force.`,
    );
  }
  if (claim.state === 'completed' && claim.authenticity === 'unverifiable' && !untrusted) {
    return new ClaimChangeRefusedError(
      'not-authentic',
      claim,
      `Key ${claim.key} is completed, signed by secret ${claim.signedBy ?? '(none: unsigned)'}, which the CLI cannot check: ` +
        'refusing to touch it, whatever --force says: it may be the genuine record of a call that happened. Give the ' +
        'CLI that secret (--worker-config, previousSecrets) to see it checked; if that secret leaked, name it with ' +
        `--distrust ${claim.signedBy ?? 'ID'} and add --force.`,
    );
  }
  if (claim.state === 'completed' && !untrusted) {
    return new ClaimChangeRefusedError(
      'completed',
      claim,
      `Key ${claim.key} is already completed (${claim.activityType}, finished ${claim.finishedAt?.toISOString()}); ` +
        `refusing to ${action} it: its recorded result is what later attempts return. If a workflow waits on it in ` +
        `resumable(), \`temporal-idempotency resume ${claim.key}\` lets it continue with that result.`,
    );
  }
  if (force || claim.state !== 'claimed') return undefined;
  if (claim.ownerAlive) {
    return new ClaimChangeRefusedError(
      'owner-alive',
      claim,
      `Key ${claim.key} is held by attempt ${claim.attempt} on worker ${claim.claimedBy}, whose lease is live until ` +
        `${claim.leaseExpiresAt?.toISOString()}: its call may be in flight right now. Wait for it, or add --force ` +
        `if you know that worker is gone.`,
    );
  }
  if (claim.deadlineAt !== null && claim.deadlineAt > claim.readAt) {
    return new ClaimChangeRefusedError(
      'before-deadline',
      claim,
      `Key ${claim.key} was claimed by attempt ${claim.attempt} on worker ${claim.claimedBy}, whose lease lapsed, but ` +
        `that attempt may run until ${claim.deadlineAt.toISOString()} (its start-to-close timeout plus a grace): a ` +
        `paused or cut-off worker may still be calling the vendor. Wait until then, or add --force if you know it stopped.`,
    );
  }
  return undefined;
}
