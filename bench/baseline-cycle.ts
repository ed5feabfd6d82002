/**
 * The same two statements the store sends for a claim and its completion,
 * copied from src/store/postgres-claim-store.ts (insertClaim, then settle
 * wrapping complete's UPDATE), sent straight through the pool as named
 * prepared statements, as the store sends them: the ceiling the store can
 * reach from Node, with no library code in the way.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { LEASE_MS, RESULT_JSON, nextClaimRequest } from './claim-input.js';
import { LATEST_MIGRATION } from '../src/store/migrations/index.js';

export function baselineCycle(pool: pg.Pool, schema: string): () => Promise<void> {
  const table = `"${schema}".claims`;
  const channel = `temporal_idempotency_${schema}`.slice(0, 63);
  const insert = `
INSERT INTO ${table}
  (key, state, token, fingerprint, namespace, activity_type, workflow_id, run_id, activity_id, attempt, claimed_by,
   lease_expires_at, worker_schema)
VALUES ($1, 'claimed', $2, $3, $4, $5, $6, $7, $8, $9, $10, now() + $11 * interval '1 millisecond', $12)
ON CONFLICT (key) DO NOTHING
RETURNING key, state, token, fingerprint, namespace, activity_type, workflow_id, run_id, activity_id,
  attempt, claimed_by, claimed_at, finished_at, result_payload, outcome_note, lease_expires_at, true AS owner_alive`;
  const complete = `
WITH settled AS (
UPDATE ${table}
SET state = 'completed', result_payload = $4, finished_at = now()
WHERE key = $1 AND token = $2 AND state = 'claimed'
RETURNING key, awaited)
SELECT CASE WHEN awaited THEN pg_notify($3, key) END
FROM settled`;
  return async () => {
    const request = nextClaimRequest();
    const { rows } = await pool.query<{ key: string; token: string }>({ name: `bench_claim_${schema}`, text: insert, values: [
      request.key,
      randomUUID(),
      request.fingerprint,
      request.namespace,
      request.activityType,
      request.workflowId,
      request.runId,
      request.activityId,
      request.attempt,
      request.claimedBy,
      LEASE_MS,
      LATEST_MIGRATION,
    ] });
    const claim = rows[0];
    if (!claim) throw new Error(`a fresh random key was already claimed: ${request.key}`);
    const { rowCount } = await pool.query({ name: `bench_complete_${schema}`, text: complete, values: [claim.key, claim.token, channel, RESULT_JSON] });
    if (rowCount !== 1) throw new Error('the completing UPDATE found no claim');
  };
}
