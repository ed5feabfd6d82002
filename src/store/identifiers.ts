/**
 * Schema names go into SQL text, so they are validated against a strict pattern
 * and then quoted; values never go into SQL text at all (they are `$n` parameters).
 */
import { IdempotencyError } from '../errors.js';

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;
const MAX_IDENTIFIER_BYTES = 63; // Postgres silently truncates longer names (NAMEDATALEN - 1).

export class InvalidIdentifierError extends IdempotencyError {
  override readonly name = 'InvalidIdentifierError';
  readonly code = 'invalid-identifier';
  constructor(
    readonly what: string,
    readonly value: unknown,
  ) {
    super(
      `Invalid ${what} ${JSON.stringify(value)}: use 1 to ${MAX_IDENTIFIER_BYTES} characters of lowercase letters, ` +
        `digits and underscores, not starting with a digit.`,
    );
  }
}

/** Returns the identifier double-quoted for SQL text, or throws naming what was wrong. */
export function quoteIdentifier(what: string, value: unknown): string {
  if (typeof value !== 'string' || value.length > MAX_IDENTIFIER_BYTES || !IDENTIFIER.test(value)) {
    throw new InvalidIdentifierError(what, value);
  }
  return `"${value}"`;
}

/** Where `migrate()` and the store put the tables unless told otherwise. */
export const DEFAULT_SCHEMA = 'temporal_idempotency';
