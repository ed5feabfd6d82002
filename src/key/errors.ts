import { IdempotencyError } from '../errors.js';

/** Raised when activity arguments have no stable, serializable form to derive a key from. */
export class InvalidKeyInputError extends IdempotencyError {
  override readonly name = 'InvalidKeyInputError';
  readonly code = 'invalid-key-input';

  constructor(
    /** Where the bad value sits, e.g. `args[1].to`. */
    readonly path: string,
    /** Why it has no stable form. */
    readonly reason: string,
  ) {
    super(`Cannot derive an idempotency key: ${path} is unsupported: ${reason}.`);
  }
}
