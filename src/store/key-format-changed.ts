/**
 * The store's answer to a claim keyed in a format that is no longer in force.
 * Its own module, free of `pg`, because the interceptor matches on it and every
 * store raises it (the in-memory one of `temporal-idempotency/testing` too).
 */
import { IdempotencyError } from '../errors.js';
import type { KeyFormatId } from './claim-store.js';

/** Thrown by `begin` when the request's keys are in a format no longer in force: derive them again and retry. */
export class KeyFormatChangedError extends IdempotencyError {
  override readonly name = 'KeyFormatChangedError';
  readonly code = 'key-format-changed';
  constructor(readonly inForce: KeyFormatId) {
    super(`The key format in force changed to ${inForce.version}${inForce.secretId ? ` (secret ${inForce.secretId})` : ''}.`);
  }
}
