/** The exit code and the line to print for an error thrown by a command. */
import {
  ClaimChangeRefusedError,
  ClaimNotFoundError,
  InvalidIdentifierError,
  SchemaNotMigratedError,
  SchemaTooNewError,
  SecretRequiredError,
} from '../store/index.js';
import { InvalidSecretError } from '../key/index.js';
import { CliError, EXIT } from './errors.js';

export function failureOf(error: unknown): { code: number; message: string } {
  if (error instanceof CliError) return { code: error.exitCode, message: error.message };
  if (error instanceof InvalidIdentifierError) return { code: EXIT.usage, message: error.message };
  if (error instanceof SecretRequiredError || error instanceof InvalidSecretError) return { code: EXIT.usage, message: error.message };
  // The database is there but not usable by this release: the message names the fix (migrate, or upgrade).
  if (error instanceof SchemaNotMigratedError || error instanceof SchemaTooNewError) return { code: EXIT.unavailable, message: error.message };
  if (error instanceof ClaimNotFoundError) return { code: EXIT.notFound, message: error.message };
  if (error instanceof ClaimChangeRefusedError) return { code: EXIT.conflict, message: error.message };
  return { code: EXIT.failure, message: error instanceof Error ? error.message : String(error) };
}
