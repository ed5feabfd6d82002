/**
 * The claim store's hot-path SQL, in one place: the store sends these, and the
 * benchmark's baseline sends the very same text straight through `pg`.
 * `schema` is an already-quoted identifier; every value is a `$n`.
 */
import { CLAIM_COLUMNS, CLAIM_READ, OWNER_ALIVE } from './claim-row.js';

/**
 * Makes this transaction's commit wait for the WAL flush (and for synchronous standbys, when
 * configured), whatever the role's or database's default: the claim must be durable before the
 * call. A stronger setting (`remote_apply`, `remote_write`) is kept as it is.
 */
const DURABLE_COMMIT = `
(SELECT set_config('synchronous_commit',
  CASE WHEN current_setting('synchronous_commit') IN ('off', 'local') THEN 'on'
  ELSE current_setting('synchronous_commit') END, true)) AS durable`;


/**
 * This transaction's commit returns before the WAL flush. A setting inside the statement, local to
 * its transaction, is what the commit sees (a function's own SET clause is undone before the commit).
 */
const RELAXED_COMMIT = `(SELECT set_config('synchronous_commit', 'off', true)) AS relaxed`;

export interface ClaimStatements {
  readonly claim: string;
  readonly claimBatch: string;
  readonly undoClaims: string;
  readonly get: string;
  readonly keySettings: string;
  readonly complete: string;
  readonly completeBatch: string;
  readonly release: string;
  readonly markUnknown: string;
  readonly renew: string;
  readonly markAwaited: string;
  readonly takeOver: string;
  readonly handBack: string;
  readonly addWaiter: string;
  readonly waitersToTell: string;
  readonly waitersTold: string;
}

/** The statements for the already-quoted `schema`. */
export function claimStatements(schema: string, options: { readonly synchronousRecords?: boolean } = {}): ClaimStatements {
  const table = `${schema}.claims`;
  const waiters = `${schema}.waiters`;
  const settings = `${schema}.settings`;
  const synchronous = options.synchronousRecords ?? false;
  const CLAIM_RETURNING = `RETURNING ${CLAIM_COLUMNS}, true AS owner_alive, now() AS read_at`;
  return {
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

    // Takes back claims whose insert may have committed though their callers were told it failed ($1 keys, $2 tokens).
    undoClaims: `
DELETE FROM ${table} AS claim
USING unnest($1::text[], $2::uuid[]) AS undone (key, token)
WHERE claim.key = undone.key AND claim.token = undone.token AND claim.state = 'claimed'
RETURNING claim.token, claim.key, claim.awaited`,

    get: `
SELECT ${CLAIM_READ}
FROM ${table}
WHERE key = $1`,

    keySettings: `
SELECT key_salt
FROM ${settings}`,

    // The settling statements return `awaited`, so the caller's NOTIFY runs only when someone waits.
    // $1 key, $2 token, $3 channel, $4 result, $5 record MAC, $6 secret id.
    complete: settling(`
UPDATE ${table}
SET state = 'completed', result_payload = $4, finished_at = now(), outcome_detail = NULL, record_mac = $5, secret_id = $6
WHERE key = $1 AND token = $2 AND state = 'claimed'
RETURNING key, awaited`, synchronous),

    // Many callers' records at once ($1 keys, $2 tokens, $3 results, $4 MACs, $5 secret ids; $6 the channel). Their
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
SELECT settled.token, settled.awaited, CASE WHEN settled.awaited THEN pg_notify($6, settled.key) END AS notified
FROM settled, ${synchronous ? DURABLE_COMMIT : RELAXED_COMMIT}`,

    release: settling(`
DELETE FROM ${table}
WHERE key = $1 AND token = $2 AND state = 'claimed'
RETURNING key, awaited`, synchronous),

    // $4 the note's safe summary, $5 record MAC, $6 secret id, $7 the full note as an encoded payload.
    markUnknown: settling(`
UPDATE ${table}
SET state = 'unknown', outcome_note = $4, outcome_detail = $7, finished_at = now(), record_mac = $5, secret_id = $6
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

    markAwaited: `
UPDATE ${table}
SET awaited = true
WHERE key = $1
RETURNING ${CLAIM_READ}`,

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

    // The orphan's identity back on the caller's taken-over claim, its outcome unknown: $4 orphan's token, $5 attempt,
    // $6 claimed_by, $7 claimed_at, $8 lease_expires_at, $9 workflow id, $10 run id, $11 activity id, $12 deadline_at,
    // $13 note, $14 note detail, $15 record MAC, $16 secret id.
    handBack: settling(`
UPDATE ${table}
SET token = $4, state = 'unknown', attempt = $5, claimed_by = $6, claimed_at = $7, lease_expires_at = $8, workflow_id = $9,
  run_id = $10, activity_id = $11, deadline_at = $12, outcome_note = $13, outcome_detail = $14, finished_at = now(),
  record_mac = $15, secret_id = $16
WHERE key = $1 AND token = $2 AND state = 'claimed'
RETURNING key, awaited`, synchronous),

    // Flags the claim as awaited first, under its row lock: an outcome recorded after this sees the flag (and
    // its recorder tells the waiter); one recorded before, or a claim gone, is the state returned, and then
    // nobody waits: no waiter is noted, so none is left for \`prune\` to keep the record for.
    addWaiter: `
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
    waitersToTell: `
SELECT key, namespace, workflow_id AS "workflowId", run_id AS "runId", activity_type AS "activityType"
FROM ${waiters}
WHERE key = $1 AND (signalled_at IS NULL OR signalled_at < refused_at)
ORDER BY refused_at`,

    // $1 key, $2 namespaces, $3 workflow ids.
    waitersTold: `
UPDATE ${waiters} AS waiter
SET signalled_at = now()
FROM unnest($2::text[], $3::text[]) AS told (namespace, workflow_id)
WHERE waiter.key = $1 AND waiter.namespace = told.namespace AND waiter.workflow_id = told.workflow_id`,
  };
}

/**
 * Wraps a statement that settles the caller's own claim: `$3` is the channel that wakes its waiters.
 * Its commit does not wait for the WAL flush unless `synchronous` (then it does, whatever the role's
 * default): only the claim must be durable
 * before the call. An outcome lost in a Postgres crash leaves its claim without one, which is
 * refused (a person checks the vendor); it never lets a call run twice.
 */
function settling(statement: string, synchronous: boolean): string {
  // The CASE only runs pg_notify for a claim someone waits on: NOTIFY serializes commits.
  return `
WITH settled AS (${statement})
SELECT awaited, CASE WHEN awaited THEN pg_notify($3, key) END AS notified
FROM settled, ${synchronous ? DURABLE_COMMIT : RELAXED_COMMIT}`;
}
