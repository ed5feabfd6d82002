/**
 * The one base of every error this library raises, and the two errors about
 * what a caller passed in, which every layer raises (the key, the stores, the
 * worker, the testing module). No Temporal import, so the framework-free key
 * module can use it too. `code` is stable across releases: match on it (or on
 * the class) rather than on message text.
 */
export abstract class IdempotencyError extends Error {
  /** A stable, machine-readable name of what went wrong, e.g. `invalid-key-input`. */
  abstract readonly code: string;
}

/**
 * Wrong options: given to `idempotencyInterceptors()` (raised when the worker is configured), to a
 * store, or to an operator method. Nothing was done with them.
 */
export class IdempotencyConfigError extends IdempotencyError {
  override readonly name = 'IdempotencyConfigError';
  readonly code = 'invalid-configuration';
  /** Which option was wrong, e.g. `activities.chargeCard.scope`. */
  readonly option: string;

  /** The message reads `Invalid idempotency option <option>: <reason>`. */
  constructor(option: string, reason: string);
  /** A message that already names the option and where it was given (`PostgresClaimStore option …`). */
  constructor(problem: { readonly option: string; readonly message: string });
  constructor(optionOrProblem: string | { readonly option: string; readonly message: string }, reason?: string) {
    const problem =
      typeof optionOrProblem === 'string'
        ? { option: optionOrProblem, message: `Invalid idempotency option ${optionOrProblem}: ${reason}` }
        : optionOrProblem;
    super(problem.message);
    this.option = problem.option;
  }
}

/** A value passed to a library function or method is out of its range or of the wrong kind; nothing was done with it. */
export class InvalidArgumentError extends IdempotencyError {
  override readonly name = 'InvalidArgumentError';
  readonly code = 'invalid-argument';
  constructor(
    /** Which argument, e.g. `olderThanMs`. */
    readonly argument: string,
    message: string,
  ) {
    super(message);
  }
}
