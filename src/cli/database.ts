/**
 * The CLI's Postgres connection: DATABASE_URL or the PG* variables, every wait
 * bounded, and every failure to use the server turned into exit 5 with a
 * message that names the server, the user and what failed: never the password.
 */
import pg from 'pg';
import { setStatementTimeout } from '../store/index.js';
import { durationText } from './duration.js';
import { CliError, EXIT } from './errors.js';
import { errorMessage } from '../error-text.js';
import { IdempotencyError } from '../errors.js';

/** Connecting and logging in: a server that accepts the TCP connection and never answers fails after this. */
export const CONNECT_TIMEOUT_MS = 5_000;
/** Each statement, unless --statement-timeout says otherwise (`migrate` has none: a migration may rewrite a large table). */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 60_000;
/**
 * The client's own wait beyond the statement timeout: if the network drops the server's answer
 * (a half-open connection after a failover), the server's cancellation never arrives either.
 */
const READ_GRACE_MS = 10_000;

/** Where the CLI connects, as an operator would name it; no password. */
export interface DatabaseTarget {
  readonly host: string;
  readonly port: number;
  readonly database: string | undefined;
  readonly user: string | undefined;
}

export interface Database {
  readonly pool: pg.Pool;
  readonly target: DatabaseTarget;
  readonly statementTimeoutMs: number | undefined;
}

export function openDatabase(statementTimeoutMs: number | undefined): Database {
  const connectionString = process.env['DATABASE_URL'];
  // What pg will use, read the way pg reads it (URL, then PG* variables, then defaults).
  const { host, port, database, user } = parsedTarget(connectionString);
  const pool = new pg.Pool({
    connectionString,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    max: 2,
    ...(statementTimeoutMs === undefined
      ? {}
      : {
          // A statement, not the statement_timeout startup parameter, which connection poolers (PgBouncer) refuse.
          onConnect: (client: pg.ClientBase) => setStatementTimeout(client, statementTimeoutMs),
          query_timeout: statementTimeoutMs + READ_GRACE_MS,
        }),
  });
  pool.on('error', () => undefined);
  return { pool, target: { host, port, database, user }, statementTimeoutMs };
}

function parsedTarget(connectionString: string | undefined): DatabaseTarget {
  try {
    const { host, port, database, user } = new pg.Client({ connectionString });
    return { host, port, database, user };
  } catch (error) {
    // Not the URL itself: it may hold the password.
    throw new CliError(
      `DATABASE_URL is not a connection string pg can read (${errorMessage(error)}); expected ` +
        'postgres://USER:PASSWORD@HOST:PORT/DATABASE, with special characters in the password percent-encoded.',
      EXIT.usage,
    );
  }
}

/** Network failures Node reports by code: nothing was said by a Postgres server. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOENT']);
const DROPPED = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);
/** pg's own errors, which carry no code. */
const NO_ANSWER = /^(timeout exceeded when trying to connect|Connection terminated due to connection timeout|timeout expired)$/;
const CLOSED = /^Connection terminated( unexpectedly)?$/;
const TLS = /SSL|TLS|certificate|self[- ]signed|CERT_|ERR_TLS|DEPTH_ZERO/i;

/**
 * The CliError (exit 5) for an error that means the database could not be used, or undefined for
 * any other error (a refused change, a bug), which keeps its own exit code.
 */
export function databaseFailure(error: unknown, database: Database): CliError | undefined {
  // The library's own errors already say what failed (Temporal over TLS, say): only pg's and the socket's are judged here.
  if (!(error instanceof Error) || error instanceof IdempotencyError) return undefined;
  const code = (error as { code?: unknown }).code;
  const sqlState = typeof code === 'string' ? code : '';
  const { host, port, database: name, user } = database.target;
  const server = `${host}:${port}`;
  const unavailable = (text: string) => new CliError(text, EXIT.unavailable);
  const reason = !sqlState || error.message.includes(sqlState) ? error.message : `${error.message} (${sqlState})`;

  if (UNREACHABLE.has(sqlState)) {
    return unavailable(`Cannot reach the database at ${server} (${sqlState}). Check DATABASE_URL or PGHOST/PGPORT, and that Postgres runs there.`);
  }
  if (NO_ANSWER.test(error.message)) {
    return unavailable(
      `The database at ${server} accepted the connection but did not answer within ${CONNECT_TIMEOUT_MS / 1000} s: ` +
        `an overloaded or failing-over server, or a proxy or firewall that holds connections.`,
    );
  }
  if (DROPPED.has(sqlState) || CLOSED.test(error.message) || /^57P0[123]$/.test(sqlState) || sqlState.startsWith('08')) {
    return unavailable(
      `The database at ${server} closed the connection (${reason}): it restarted or failed over, or a proxy or ` +
        `firewall dropped it. Try again; if it persists, check the server's log.`,
    );
  }
  if (sqlState === '3D000') {
    return unavailable(`The server at ${server} has no database "${name}" (${reason}). Check the database in DATABASE_URL or PGDATABASE.`);
  }
  if (sqlState.startsWith('28') || /^SASL:/.test(error.message)) {
    return unavailable(
      `The database at ${server} refused the login of user "${user}" to database "${name}": ${reason}. Check the user and ` +
        `password in DATABASE_URL or PGUSER/PGPASSWORD, and that pg_hba.conf admits this user from here (with TLS if it requires it).`,
    );
  }
  if (sqlState === '53300') {
    return unavailable(`The database at ${server} refused a connection: ${reason}. Try again when fewer clients are connected.`);
  }
  if (sqlState === '57014' || error.message === 'Query read timeout') {
    const limit = database.statementTimeoutMs === undefined ? 'in time' : `within ${durationText(database.statementTimeoutMs)}`;
    return unavailable(
      `The database at ${server} did not finish a statement ${limit} (${reason}): a lock held by another session, an ` +
        `overloaded server, or a very large table. Raise the limit with --statement-timeout (e.g. 10m) if the work is large.`,
    );
  }
  if (TLS.test(error.message) || TLS.test(sqlState)) {
    return unavailable(
      `TLS to the database at ${server} failed: ${reason}. Check sslmode (and sslrootcert) in DATABASE_URL or PGSSLMODE against the server's TLS settings.`,
    );
  }
  return undefined;
}
