/** Errors the CLI turns into a message and a documented exit code. */
import { IdempotencyError } from '../errors.js';

export const EXIT = {
  ok: 0,
  /** Anything unexpected. */
  failure: 1,
  /** Bad usage or bad input: unknown command or flag, invalid JSON, invalid duration. */
  usage: 2,
  /** The key has no claim. */
  notFound: 3,
  /** The claim's state does not allow it (resolving a completed key, releasing a call that may be in flight). */
  conflict: 4,
  /** The database cannot be used: unreachable, login refused, no answer in time, or its schema not at this release's migration. */
  unavailable: 5,
  /** The claim changed, but a workflow waiting on it could not be signalled: the operator must signal it. */
  signalFailed: 6,
  /** `ledger` cannot say whether the calls asked about went out: no audit ledger recorded (some of) them. */
  ledgerSilent: 7,
} as const;

/** The exit codes a CliError can end the CLI with: every one but success. */
export type FailureExitCode = Exclude<(typeof EXIT)[keyof typeof EXIT], typeof EXIT.ok>;

/** A stable code per exit kind, so the code says what the exit code says (a usage error is not a database outage). */
const CODES: Readonly<Record<FailureExitCode, string>> = {
  [EXIT.failure]: 'cli-failure',
  [EXIT.usage]: 'cli-usage',
  [EXIT.notFound]: 'cli-not-found',
  [EXIT.conflict]: 'cli-conflict',
  [EXIT.unavailable]: 'cli-database-unavailable',
  [EXIT.signalFailed]: 'cli-signal-failed',
  [EXIT.ledgerSilent]: 'cli-ledger-cannot-tell',
};

export class CliError extends IdempotencyError {
  override readonly name = 'CliError';
  readonly code: string;
  constructor(
    message: string,
    readonly exitCode: FailureExitCode,
  ) {
    super(message);
    this.code = CODES[exitCode];
  }
}
