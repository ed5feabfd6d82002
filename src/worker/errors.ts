/**
 * Errors that users throw or catch around the interceptor.
 *
 * The two an activity throws to speak about its outcome are recognised by a
 * brand, not by class identity: a project with two copies of this library
 * (one from a dependency) must still have its word taken.
 */

import { IdempotencyError } from '../errors.js';

const OUTCOME_UNKNOWN = Symbol.for('temporal-idempotency.OutcomeUnknownError');
const NOT_SENT = Symbol.for('temporal-idempotency.NotSentError');

/**
 * Throw this from an activity when the external call may have happened but its
 * outcome is unknown (say, a timeout after the request was sent). The claim is
 * kept as `unknown` and every later attempt is refused instead of repeating it.
 */
export class OutcomeUnknownError extends IdempotencyError {
  override readonly name: string = 'OutcomeUnknownError';
  readonly code: string = 'outcome-unknown';
  declare readonly [OUTCOME_UNKNOWN]: true;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }

  /** True for any copy's OutcomeUnknownError; subclasses keep the ordinary check. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return this === OutcomeUnknownError ? hasBrand(value, OUTCOME_UNKNOWN) : Function.prototype[Symbol.hasInstance].call(this, value);
  }
}
Object.defineProperty(OutcomeUnknownError.prototype, OUTCOME_UNKNOWN, { value: true });

/**
 * Throw this from an activity when you know the external call was not sent (you
 * checked before sending, or the client reports that it never connected). The
 * claim is released and Temporal's retry policy decides, even if the activity
 * was being cancelled at the time.
 */
export class NotSentError extends IdempotencyError {
  override readonly name: string = 'NotSentError';
  readonly code: string = 'not-sent';
  declare readonly [NOT_SENT]: true;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    return this === NotSentError ? hasBrand(value, NOT_SENT) : Function.prototype[Symbol.hasInstance].call(this, value);
  }
}
Object.defineProperty(NotSentError.prototype, NOT_SENT, { value: true });

function hasBrand(value: unknown, brand: symbol): boolean {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[brand] === true;
}
