/**
 * The one base of every error this library raises. No Temporal import, so the
 * framework-free key module can use it too. `code` is stable across releases:
 * match on it (or on the class) rather than on message text.
 */
export abstract class IdempotencyError extends Error {
  /** A stable, machine-readable name of what went wrong, e.g. `invalid-key-input`. */
  abstract readonly code: string;
}
