/**
 * The store's answer when a key kept changing hands while a caller tried to
 * claim it: nothing was claimed, so nothing may be called; a retry claims it.
 */
import { IdempotencyError } from '../errors.js';

/** Thrown by `begin` when the key was claimed and released again each time the caller looked. */
export class ClaimContendedError extends IdempotencyError {
  override readonly name = 'ClaimContendedError';
  readonly code = 'claim-contended';
  constructor(
    readonly key: string,
    readonly attempts: number,
  ) {
    super(`Key ${key} was claimed and released ${attempts} times while this caller tried to claim it; nothing was claimed.`);
  }
}
