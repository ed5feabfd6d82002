/**
 * Every statement on `<schema>.ledger`, the append-only record of the calls that went out: the
 * workers append (and never read), the operators read and its owner prunes. `schema` is an
 * already-quoted identifier; every value is a `$n`.
 */

export type LedgerSql = ReturnType<typeof ledgerSql>;

export function ledgerSql(schema: string) {
  const ledger = `${schema}.ledger`;
  const claims = `${schema}.claims`;
  // Whole calls whose last entry is older than $1 ms, none of whose keys still has a claim without an outcome
  // (every key the call's entries name, not one: the worker role writes the entries, and one under another key
  // must not make a call whose claim has no outcome look settled).
  const prunableCalls = `
SELECT entry.call_id
FROM ${ledger} AS entry
GROUP BY entry.call_id
HAVING max(entry.at) < now() - $1::float8 * interval '1 millisecond'
  AND NOT EXISTS (SELECT 1 FROM ${claims} AS claim WHERE claim.key = ANY (array_agg(entry.key)) AND claim.state <> 'completed')`;
  return {
    // A start, finish or reconciliation entry. `error_message` keeps the error's class only ($11 twice): its text may
    // carry user data, so it goes in `error_detail` ($12), encoded.
    append: `
INSERT INTO ${ledger}
  (call_id, event, key, activity_type, workflow_id, run_id, activity_id, attempt, worker, outcome, error_message,
   error_class, error_detail)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11, $12)`,

    // Calls, newest first, by key ($1) or workflow ($2), at most $3.
    calls: `
SELECT key, activity_type AS "activityType", workflow_id AS "workflowId", attempt, worker,
  started_at AS "startedAt", finished_at AS "finishedAt", outcome, error_message AS "errorMessage"
FROM ${schema}.ledger_calls
WHERE ($1::text IS NULL OR key = $1) AND ($2::text IS NULL OR workflow_id = $2)
ORDER BY started_at DESC
LIMIT $3`,

    // Whether the role connected owns the ledger ($1 its qualified name): only its owner may prune it (a trigger
    // refuses everyone else).
    ownedByMe: `SELECT pg_get_userbyid(relowner) = current_user AS owns FROM pg_class WHERE oid = $1::regclass`,

    countPrunable: `SELECT count(*)::integer AS count FROM ${ledger} WHERE call_id IN (${prunableCalls})`,

    prune: `DELETE FROM ${ledger} WHERE call_id IN (${prunableCalls})`,
  };
}
