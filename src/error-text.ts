/**
 * The one place an error becomes text. Each form is named for where its text may go, because an
 * error's own message can carry user data (a URL with an api key, an argument) or the database's
 * host and user names:
 *
 * - `errorClass`, `failureType`, `errorSummary`: safe anywhere (workflow history, the Web UI,
 *   traces, metrics, notes in plain text).
 * - `storeFailureText`: a store failure in history, by its code: no host or user names.
 * - `errorMessage`: the operator's own terminal and the worker's own log, about the store, the CLI's
 *   steps or Temporal's client; never about an activity's error.
 * - `errorText`: everything, with the first cause; stored or shown only through the worker's codec.
 *
 * No Temporal import: the key and store modules use it too.
 */
import { IdempotencyError } from './errors.js';

/** An error's class, the one part of it that is safe to show anywhere. */
export function errorClass(error: unknown): string {
  if (error instanceof Error) return error.name || 'Error';
  return error === null ? 'null' : typeof error;
}

/** A Temporal failure's `type` when it has one (an ApplicationFailure), else the error's class. */
export function failureType(error: unknown): string {
  const type = (error as { type?: unknown } | null)?.type;
  return typeof type === 'string' && type ? type : errorClass(error);
}

/** A library error's own message (written to carry no user data), else the class alone. */
export function errorSummary(error: unknown): string {
  return error instanceof IdempotencyError ? error.message : errorClass(error);
}

/**
 * An error's own message, or a thrown non-error as text: what the operator needs to fix a
 * connection or a file (it may name hosts, users and paths, which history and traces must not).
 */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * An error as one line for messages and notes: `TypeError: fetch failed (cause: SocketError: other side
 * closed [UND_ERR_SOCKET])`. The first cause is included: a transport's top-level error rarely says what broke.
 */
export function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? ` (cause: ${oneError(error.cause)})` : '';
  return `${oneError(error)}${cause}`;
}

function oneError(error: Error): string {
  const code = (error as { code?: unknown }).code;
  return `${error.name}: ${error.message || '(no message)'}${typeof code === 'string' ? ` [${code}]` : ''}`;
}

const STORE_FAILURES: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'database host not found',
  EAI_AGAIN: 'database host lookup failed',
  ETIMEDOUT: 'connection timed out',
  ECONNRESET: 'connection reset',
  '28P01': 'authentication failed',
  '28000': 'authorization failed',
  '3D000': 'database does not exist',
  '42P01': 'a table is missing',
  '42501': 'permission denied',
  '57P01': 'the server is shutting down',
  '57P03': 'the server is starting up',
  '53300': 'too many connections',
};

/**
 * What went wrong with the store, by code only: a driver's message can carry the database's host and
 * user names. Library errors (which name only the schema or the key) keep their own message.
 */
export function storeFailureText(cause: unknown): string {
  if (cause instanceof IdempotencyError) return cause.message.replace(/\.$/, '');
  const code = (cause as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return `${STORE_FAILURES[code] ?? 'database error'} [${code}]`;
  if (cause instanceof Error && /timeout/i.test(cause.message)) return 'timed out waiting for a connection';
  return cause instanceof Error ? cause.name : 'unknown failure';
}
