/** What a `pg` error says about a statement: whether it surely rolled back, and its SQLSTATE. */

/**
 * SQLSTATE classes that end a backend or its connection (connection exception, insufficient resources,
 * operator intervention such as a shutdown or pg_terminate_backend, system and internal errors): the
 * statement may have committed before the backend went.
 */
const BACKEND_LOST_CLASSES = new Set(['08', '53', '57', '58', 'XX']);
/** "Statement completion unknown": the server itself cannot say whether it committed (distributed SQL sends it). */
const COMPLETION_UNKNOWN = '40003';

/**
 * Whether Postgres answered the statement with an error that rolled its transaction back, so nothing it
 * did was committed: an SQLSTATE from the server, and not one that ends the backend (by class, since a
 * server may report its severity in another language). A lost connection, a client-side timeout, or a
 * backend ended mid-statement (perhaps after its commit) leaves that unknown.
 */
export function rolledBack(error: unknown): boolean {
  const code = sqlStateOf(error);
  const severity = (error as { severity?: unknown } | null)?.severity;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code) || typeof severity !== 'string') return false;
  if (code === COMPLETION_UNKNOWN || severity === 'FATAL' || severity === 'PANIC') return false;
  return !BACKEND_LOST_CLASSES.has(code.slice(0, 2));
}

export function sqlStateOf(error: unknown): unknown {
  return (error as { code?: unknown } | null)?.code;
}
