/**
 * Errors that users throw or catch around the interceptor.
 */

/**
 * Throw this from an activity when the external call may have happened but its
 * outcome is unknown (say, a timeout after the request was sent). The claim is
 * kept as `unknown` and every later attempt is refused instead of repeating it.
 */
export class OutcomeUnknownError extends Error {
  override readonly name = 'OutcomeUnknownError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Wrong options given to `idempotencyInterceptors()`; raised when the worker is configured. */
export class IdempotencyConfigError extends Error {
  override readonly name = 'IdempotencyConfigError';
  constructor(
    /** Which option was wrong, e.g. `activities.chargeCard.scope`. */
    readonly option: string,
    message: string,
  ) {
    super(`Invalid idempotency option ${option}: ${message}`);
  }
}
