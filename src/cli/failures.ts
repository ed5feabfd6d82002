/** The exit code and the line to print for an error thrown by a command. */
import {
  ClaimChangeRefusedError,
  ClaimNotFoundError,
  InvalidIdentifierError,
  InvalidSecretError,
  LedgerPruneRefusedError,
  SchemaBeforeBaselineError,
  SchemaNotMigratedError,
  SchemaTooNewError,
  SecretRequiredError,
} from '../store/index.js';
import { errorMessage } from '../error-text.js';
import { CliError, EXIT } from './errors.js';

/** The line is the error's own message: the operator's terminal is where a host or a path helps. */
export function failureOf(error: unknown): { code: number; message: string } {
  return { code: exitCodeOf(error), message: errorMessage(error) };
}

function exitCodeOf(error: unknown): number {
  if (error instanceof CliError) return error.exitCode;
  if (error instanceof InvalidIdentifierError) return EXIT.usage;
  if (error instanceof SecretRequiredError || error instanceof InvalidSecretError) return EXIT.usage;
  // The database is there but not usable by this release: the message names the fix (migrate, or upgrade).
  if (error instanceof SchemaNotMigratedError || error instanceof SchemaTooNewError || error instanceof SchemaBeforeBaselineError) return EXIT.unavailable;
  if (error instanceof ClaimNotFoundError) return EXIT.notFound;
  if (error instanceof ClaimChangeRefusedError || error instanceof LedgerPruneRefusedError) return EXIT.conflict;
  return EXIT.failure;
}
