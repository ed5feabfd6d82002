/**
 * Every statement on `<schema>.claims`, the workers' and the operators' side by side: one row per
 * key, claimed before the call, settled after it, changed by a person only through these.
 * `schema` is an already-quoted identifier; every value is a `$n`. The benchmark's baseline sends
 * the very same worker statements straight through `pg`.
 */
import { CLAIM_COLUMNS, CLAIM_READ, OWNER_ALIVE } from '../claim-row.js';
import { DURABLE_COMMIT, RELAXED_COMMIT, settling } from './commit.js';

/** How many pruned keys a prune's operator-trail row lists (the count is always whole). */
export const PRUNE_TRAIL_KEYS = 1_000;

export type ClaimsSql = ReturnType<typeof claimsSql>;

export function claimsSql(schema: string, options: { readonly synchronousRecords?: boolean } = {}) {
  const table = `${schema}.claims`;
  const waiters = `${schema}.waiters`;
  const synchronous = options.synchronousRecords ?? false;
  const CLAIM_RETURNING = `RETURNING ${CLAIM_COLUMNS}, true AS owner_alive, now() AS read_at`;
  /**
   * The completed claims past the horizon that nobody may still need: `$1` the horizon in ms, `$2` the
   * instant it counts back from (null: now()), `$3`/`$4` the namespaces and ids of workflows whose
   * claims stay. A waiter never told of a decision (its signal failed), or told within the horizon,
   * may still call again and must find the record.
   */
  const cutoff = `(coalesce($2::timestamptz, now()) - $1::float8 * interval '1 millisecond')`;
  const prunable = `claims.state = 'completed' AND claims.finished_at < ${cutoff}
  AND NOT EXISTS (
    SELECT 1 FROM ${waiters} AS waiter
    WHERE waiter.key = claims.key AND (waiter.signalled_at IS NULL OR waiter.signalled_at >= ${cutoff}))
  AND NOT EXISTS (
    SELECT 1 FROM unnest($3::text[], $4::text[]) AS kept(namespace, workflow_id)
    WHERE kept.namespace = claims.namespace AND kept.workflow_id = claims.workflow_id)`;
  return {
    // ---- Workers: the hot path, sent as named prepared statements. ----

    // $1 key, $2 token, $3 fingerprint, … $11 lease ms, $12 deadline ms, $13 record MAC, $14 secret id, $15 the encoded
    // arguments, $16 whether a ledger records the call.
    claim: `
INSERT INTO ${table}
  (key, state, token, fingerprint, namespace, activity_type, workflow_id, run_id, activity_id, attempt, claimed_by,
   lease_expires_at, deadline_at, record_mac, secret_id, call_arguments, audited)
SELECT $1::text, 'claimed', $2::uuid, $3::text, $4::text, $5::text, $6::text, $7::text, $8::text, $9::integer, $10::text,
  now() + $11::float8 * interval '1 millisecond', now() + $12::float8 * interval '1 millisecond', $13::text, $14::text, $15::jsonb,
  $16::boolean
FROM ${DURABLE_COMMIT}
ON CONFLICT (key) DO NOTHING
${CLAIM_RETURNING}`,

    // The claim statement for many requests at once: the same columns and parameters, each an array. Inserted in key
    // order, so two batches with keys in common wait for each other in one order and cannot deadlock. Returns the
    // claims it inserted.
    claimBatch: `
INSERT INTO ${table}
  (key, state, token, fingerprint, namespace, activity_type, workflow_id, run_id, activity_id, attempt, claimed_by,
   lease_expires_at, deadline_at, record_mac, secret_id, call_arguments, audited)
SELECT request.key, 'claimed', request.token, request.fingerprint, request.namespace, request.activity_type, request.workflow_id,
  request.run_id, request.activity_id, request.attempt, request.claimed_by,
  now() + request.lease_ms * interval '1 millisecond', now() + request.deadline_ms * interval '1 millisecond', request.record_mac,
  request.secret_id, request.call_arguments, request.audited
FROM unnest($1::text[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::integer[],
  $10::text[], $11::float8[], $12::float8[], $13::text[], $14::text[], $15::jsonb[], $16::boolean[])
  AS request (key, token, fingerprint, namespace, activity_type, workflow_id, run_id, activity_id, attempt, claimed_by,
    lease_ms, deadline_ms, record_mac, secret_id, call_arguments, audited),
  ${DURABLE_COMMIT}
ORDER BY request.key
ON CONFLICT (key) DO NOTHING
${CLAIM_RETURNING}`,

    // The caller's own claim, inserted by a try whose answer was lost: its lease renewed in a durable commit ($1 key,
    // $2 token, $3 lease ms). The flush of this commit is also that of the insert, written before it.
    reclaim: `
UPDATE ${table}
SET lease_expires_at = now() + $3::float8 * interval '1 millisecond'
FROM ${DURABLE_COMMIT}
WHERE key = $1 AND token = $2 AND state = 'claimed'
${CLAIM_RETURNING}`,

    get: `
SELECT ${CLAIM_READ}
FROM ${table}
WHERE key = $1`,

    // The settling statements return `awaited`: whether a workflow was refused on the key, to be told of its outcome.
    // $1 key, $2 token, $3 result, $4 record MAC, $5 secret id.
    complete: settling(`
UPDATE ${table}
SET state = 'completed', result_payload = $3, finished_at = now(), outcome_detail = NULL, record_mac = $4, secret_id = $5
WHERE key = $1 AND token = $2 AND state = 'claimed'
RETURNING key, awaited`, synchronous),

    // Many callers' records at once ($1 keys, $2 tokens, $3 results, $4 MACs, $5 secret ids). Their
    // rows are locked in key order first, as the lease renewal locks its own, so neither can deadlock the other.
    // Returns the tokens it settled.
    completeBatch: `
WITH settling AS (
  SELECT held.key, held.token, held.result, held.record_mac, held.secret_id
  FROM unnest($1::text[], $2::uuid[], $3::jsonb[], $4::text[], $5::text[]) AS held (key, token, result, record_mac, secret_id)
  JOIN ${table} AS claim ON claim.key = held.key AND claim.token = held.token
  WHERE claim.state = 'claimed'
  ORDER BY claim.key
  FOR UPDATE OF claim
), settled AS (
  UPDATE ${table} AS claim
  SET state = 'completed', result_payload = settling.result, finished_at = now(), outcome_detail = NULL, record_mac = settling.record_mac,
    secret_id = settling.secret_id
  FROM settling
  WHERE claim.key = settling.key AND claim.token = settling.token AND claim.state = 'claimed'
  RETURNING claim.key, claim.token, claim.awaited
)
SELECT settled.token, settled.awaited
FROM settled, ${synchronous ? DURABLE_COMMIT : RELAXED_COMMIT}`,

    release: settling(`
DELETE FROM ${table}
WHERE key = $1 AND token = $2 AND state = 'claimed'
RETURNING key, awaited`, synchronous),

    // $3 the note's safe summary, $4 record MAC, $5 secret id, $6 the full note as an encoded payload.
    markUnknown: settling(`
UPDATE ${table}
SET state = 'unknown', outcome_note = $3, outcome_detail = $6, finished_at = now(), record_mac = $4, secret_id = $5
WHERE key = $1 AND token = $2 AND state = 'claimed'
RETURNING key, awaited`, synchronous),

    // Locks its rows in key order first, as a batch of records does, so the two cannot deadlock.
    renew: `
WITH renewing AS (
  SELECT claim.key, claim.token
  FROM unnest($1::text[], $2::uuid[]) AS held (key, token)
  JOIN ${table} AS claim ON claim.key = held.key AND claim.token = held.token
  WHERE claim.state = 'claimed'
  ORDER BY claim.key
  FOR UPDATE OF claim
)
UPDATE ${table} AS claim
SET lease_expires_at = now() + $3::float8 * interval '1 millisecond'
FROM renewing
WHERE claim.key = renewing.key AND claim.token = renewing.token AND claim.state = 'claimed'
RETURNING claim.token`,

    // The taker's identity replaces the orphan's, so the row never pairs one attempt's ids with another's. An
    // orphan is a claim whose owner is not alive by the one definition reads use; OWNER_ALIVE is never NULL (a
    // claim without a lease reads as dead), so its negation keeps such a claim takeable. $13 note, $14 its detail,
    // $15 whether a ledger records the taker's call.
    takeOver: `
UPDATE ${table}
SET token = $3, state = 'claimed', attempt = $4, claimed_by = $5, claimed_at = now(),
  lease_expires_at = now() + $6::float8 * interval '1 millisecond', finished_at = NULL, outcome_note = $13,
  outcome_detail = $14, result_payload = NULL, workflow_id = $7, run_id = $8, activity_id = $9,
  deadline_at = now() + $10::float8 * interval '1 millisecond', record_mac = $11, secret_id = $12, audited = $15
FROM ${DURABLE_COMMIT}
WHERE key = $1 AND token = $2
  AND (state = 'unknown' OR (state = 'claimed' AND NOT ${OWNER_ALIVE}))
${CLAIM_RETURNING}`,

    // The orphan's identity back on the caller's taken-over claim, its outcome unknown: $3 orphan's token, $4 attempt,
    // $5 claimed_by, $6 claimed_at, $7 lease_expires_at, $8 workflow id, $9 run id, $10 activity id, $11 deadline_at,
    // $12 note, $13 note detail, $14 record MAC, $15 secret id.
    handBack: settling(`
UPDATE ${table}
SET token = $3, state = 'unknown', attempt = $4, claimed_by = $5, claimed_at = $6, lease_expires_at = $7, workflow_id = $8,
  run_id = $9, activity_id = $10, deadline_at = $11, outcome_note = $12, outcome_detail = $13, finished_at = now(),
  record_mac = $14, secret_id = $15
WHERE key = $1 AND token = $2 AND state = 'claimed'
RETURNING key, awaited`, synchronous),

    // ---- Operators: the CLI and ClaimOperations. ----

    // Claims without an outcome first (they are the ones that need a person), oldest first.
    list: `
SELECT key, state, activity_type AS "activityType", workflow_id AS "workflowId", attempt,
  claimed_by AS "claimedBy", claimed_at AS "claimedAt", ${OWNER_ALIVE} AS "ownerAlive"
FROM ${table}
WHERE ($1::text IS NULL OR state = $1 OR ($1 = 'open' AND state <> 'completed'))
  AND ($2::text IS NULL OR workflow_id = $2)
  AND ($3::text IS NULL OR activity_type = $3)
  AND ($4::float8 IS NULL OR claimed_at < now() - $4 * interval '1 millisecond')
ORDER BY state = 'completed', claimed_at, key
LIMIT $5`,

    // Locked for an operator's change: checked, changed and recorded in one transaction.
    getForUpdate: `SELECT ${CLAIM_READ} FROM ${table} WHERE key = $1 FOR UPDATE`,

    existsForUpdate: `SELECT 1 FROM ${table} WHERE key = $1 FOR UPDATE`,

    recordedArguments: `SELECT call_arguments FROM ${table} WHERE key = $1`,

    // What an activity type returned last ($1 type, $2 a key to leave out, $3 how many), for resolve to compare.
    recordedResults: `
SELECT ${CLAIM_READ} FROM ${table}
WHERE activity_type = $1 AND state = 'completed' AND key <> $2
ORDER BY finished_at DESC
LIMIT $3`,

    // $1 key, $2 result, $3 note, $4 record MAC, $5 secret id.
    resolveByOperator: `
UPDATE ${table}
SET state = 'completed', result_payload = $2, finished_at = now(), outcome_note = $3, outcome_detail = NULL,
  record_mac = $4, secret_id = $5
WHERE key = $1`,

    releaseByOperator: `DELETE FROM ${table} WHERE key = $1`,

    completedNamespaces: `SELECT DISTINCT namespace FROM ${table} WHERE state = 'completed' ORDER BY namespace`,

    pruneCandidateWorkflows: `
SELECT namespace, workflow_id AS "workflowId", count(*)::integer AS claims
FROM ${table} AS claims
WHERE claims.workflow_id IS NOT NULL AND ${prunable}
GROUP BY namespace, workflow_id
ORDER BY namespace, workflow_id`,

    pruneSummary: `
SELECT activity_type, count(*)::integer AS count, min(finished_at) AS oldest, max(finished_at) AS newest
FROM ${table} AS claims
WHERE ${prunable}
GROUP BY activity_type
ORDER BY activity_type`,

    // The trail names what went (the first keys, in order), so a later "why was this call made again?" finds it.
    prune: `
WITH pruned AS (
  DELETE FROM ${table} AS claims
  WHERE ${prunable}
  RETURNING claims.key
)
SELECT count(*)::integer AS count, (array_agg(key ORDER BY key))[1:${PRUNE_TRAIL_KEYS}] AS keys
FROM pruned`,

    // How many claims a ledger query is about ($1 key, $2 workflow id, either null), and how many no ledger recorded.
    ledgerCoverage: `
SELECT count(*)::integer AS claims, count(*) FILTER (WHERE NOT audited)::integer AS unaudited
FROM ${table}
WHERE ($1::text IS NULL OR key = $1) AND ($2::text IS NULL OR workflow_id = $2)`,

    signers: `SELECT secret_id, count(*)::integer AS rows FROM ${table} GROUP BY secret_id ORDER BY count(*) DESC, secret_id`,

    // A page of the rows not signed by $2, after key $1, with their row version (keys re-sign).
    notSignedBy: `
SELECT ${CLAIM_READ}, xmin::text AS version FROM ${table}
WHERE key > $1 AND secret_id IS DISTINCT FROM $2
ORDER BY key
LIMIT $3`,

    // Signed anew ($1 keys, $2 row versions, $3 MACs, $4 the secret): a row changed since it was read (another row
    // version: a worker settled or renewed it) is left alone, since the MAC made covers what was read.
    resign: `
UPDATE ${table} AS claim SET record_mac = moved.mac, secret_id = $4
FROM unnest($1::text[], $2::text[], $3::text[]) AS moved (key, version, mac)
WHERE claim.key = moved.key AND claim.xmin::text = moved.version`,
  };
}
