/**
 * Every statement on `<schema>.waiters`: the workflows refused on a key, so an operator's decision
 * (or an owner's late outcome) reaches each of them; the workers' and the operators' side by side.
 * `schema` is an already-quoted identifier; every value is a `$n`.
 */

export type WaitersSql = ReturnType<typeof waitersSql>;

export function waitersSql(schema: string) {
  const table = `${schema}.claims`;
  const waiters = `${schema}.waiters`;
  return {
    // Flags the claim as awaited first, under its row lock: an outcome recorded after this sees the flag (and
    // its recorder tells the waiter); one recorded before, or a claim gone, is the state returned, and then
    // nobody waits: no waiter is noted, so none is left for `prune` to keep the record for.
    add: `
WITH flagged AS (
  UPDATE ${table}
  SET awaited = true
  WHERE key = $1
  RETURNING state
), noted AS (
  INSERT INTO ${waiters} (key, namespace, workflow_id, run_id, activity_type)
  SELECT $1, $2, $3, $4, $5
  WHERE EXISTS (SELECT 1 FROM flagged WHERE state <> 'completed')
  ON CONFLICT (key, namespace, workflow_id) DO UPDATE SET run_id = EXCLUDED.run_id, refused_at = now()
)
SELECT (SELECT state FROM flagged) AS state`,

    // Refused since they were last told (or never told): they may still wait in resumable().
    toTell: `
SELECT key, namespace, workflow_id AS "workflowId", run_id AS "runId", activity_type AS "activityType"
FROM ${waiters}
WHERE key = $1 AND (signalled_at IS NULL OR signalled_at < refused_at)
ORDER BY refused_at`,

    // $1 key, $2 namespaces, $3 workflow ids.
    told: `
UPDATE ${waiters} AS waiter
SET signalled_at = now()
FROM unnest($2::text[], $3::text[]) AS told (namespace, workflow_id)
WHERE waiter.key = $1 AND waiter.namespace = told.namespace AND waiter.workflow_id = told.workflow_id`,

    // ---- Operators. ----

    // Every workflow refused on $1, oldest first.
    of: `
SELECT key, namespace, workflow_id AS "workflowId", run_id AS "runId", activity_type AS "activityType"
FROM ${waiters}
WHERE key = $1
ORDER BY refused_at`,

    // One told of a decision; it stays, so `resume` reaches it again if it still waits.
    markSignalled: `UPDATE ${waiters} SET signalled_at = now() WHERE key = $1 AND namespace = $2 AND workflow_id = $3`,

    // One whose workflow is closed: nothing waits there any more.
    forget: `DELETE FROM ${waiters} WHERE key = $1 AND namespace = $2 AND workflow_id = $3`,

    // Told of a decision before the cutoff ($1 ms before $2, or now()), with no claim left: they wait for nothing here.
    prune: `
DELETE FROM ${waiters} AS waiter
WHERE signalled_at < coalesce($2::timestamptz, now()) - $1::float8 * interval '1 millisecond'
  AND NOT EXISTS (SELECT 1 FROM ${table} AS claim WHERE claim.key = waiter.key)`,
  };
}
