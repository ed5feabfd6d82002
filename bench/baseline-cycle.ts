/**
 * The store's own two statements for a claim and its completion (imported from
 * src/store/sql/claims.ts, never copied), sent straight through the
 * pool as named prepared statements, as the store sends them: the ceiling the
 * store can reach from Node, with no library code in the way.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { claimsSql } from '../src/store/sql/index.js';
import { LEASE_MS, RESULT_JSON, nextClaimRequest } from './claim-input.js';

export function baselineCycle(pool: pg.Pool, schema: string): () => Promise<void> {
  const quoted = `"${schema}"`;
  const statements = claimsSql(quoted);
  return async () => {
    const request = nextClaimRequest();
    const { rows } = await pool.query<{ key: string; token: string }>({
      name: `bench_claim_${schema}`,
      text: statements.claim,
      // The store's parameters for an unsigned claim: no MAC, no secret, no recorded arguments, no ledger.
      values: [
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
        request.deadlineMs,
        null,
        null,
        null,
        false,
      ],
    });
    const claim = rows[0];
    if (!claim) throw new Error(`a fresh random key was already claimed: ${request.key}`);
    const { rowCount } = await pool.query({
      name: `bench_complete_${schema}`,
      text: statements.complete,
      values: [claim.key, claim.token, RESULT_JSON, null, null],
    });
    if (rowCount !== 1) throw new Error('the completing UPDATE found no claim');
  };
}
