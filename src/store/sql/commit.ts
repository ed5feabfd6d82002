/**
 * How each statement's own transaction commits: the claim waits for the WAL flush (it is what
 * stops a second call), an outcome need not (one lost in a crash leaves a claim without an
 * outcome, which refuses, never repeats). Set inside the statement, local to its transaction:
 * that is what the commit sees (a function's own SET clause is undone before the commit).
 */

/**
 * The commit waits for the WAL flush (and for synchronous standbys, when configured), whatever the
 * role's or database's default. A stronger setting (`remote_apply`, `remote_write`) is kept.
 */
export const DURABLE_COMMIT = `
(SELECT set_config('synchronous_commit',
  CASE WHEN current_setting('synchronous_commit') IN ('off', 'local') THEN 'on'
  ELSE current_setting('synchronous_commit') END, true)) AS durable`;

/** The commit returns before the WAL flush. */
export const RELAXED_COMMIT = `(SELECT set_config('synchronous_commit', 'off', true)) AS relaxed`;

/** Wraps a statement that settles the caller's own claim and returns `awaited`, committed as `synchronous` says. */
export function settling(statement: string, synchronous: boolean): string {
  return `
WITH settled AS (${statement})
SELECT awaited
FROM settled, ${synchronous ? DURABLE_COMMIT : RELAXED_COMMIT}`;
}
