/**
 * Found in review: a batch of claims whose commit is reported ambiguous (SQLSTATE 40003,
 * statement_completion_unknown, severity ERROR) counts as rolled back: the store
 * retries each claim alone instead of undoing the batch's by token, though the
 * batch may have committed.
 *
 * `rolledBack()` (665c63e) takes every SQLSTATE outside classes 08/53/57/58/XX,
 * at severity ERROR, as "nothing was committed". Class 40 holds 40003, whose
 * very meaning is "the statement may or may not have completed". CockroachDB,
 * the distributed SQL the design says the claim table "runs unchanged on",
 * answers an autocommit statement with it ("result is ambiguous") when its commit
 * may have gone through. Postgres itself never sends it, so the server's answer
 * is injected here after a real, committed statement.
 *
 * What follows: each caller retries alone with a fresh token, finds the batch's
 * committed row (this worker's own claim, under a token nobody holds), and is told
 * it lost the key to a live owner. The interceptor waits on it, its lease lapses
 * (nobody renews it), and the call, which never went out, is refused as an
 * IdempotencyOrphanedClaim (non-retryable) until an operator releases it. One
 * claim alone, with the same answer, is undone by token and its caller fails
 * retryably, as it should.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { PostgresClaimStore } from '../../src/index.js';
import type { StoreLogger } from '../../src/index.js';
import { claimRequest } from '../support/claims.js';
import { useTestSchema } from '../support/schema.js';

const schema = useTestSchema(import.meta.filename);
const LEASE_MS = 30_000;
const pools: pg.Pool[] = [];
afterAll(async () => void (await Promise.all(pools.map((pool) => pool.end()))));
const quiet: StoreLogger = { warn: () => undefined, error: () => undefined };

/** A pool whose server commits the named statement and then says its completion is unknown (CockroachDB's ambiguous result). */
function ambiguousAfterCommit(statement: 'claim' | 'claim_batch') {
  const pool = new pg.Pool({ connectionString: inject('databaseUrl'), max: 10 });
  pools.push(pool);
  let injected = 0;
  const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
  (pool as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = async (...args: unknown[]) => {
    const name = (args[0] as { name?: string } | undefined)?.name?.replace(/^ti_[0-9a-f]+_/, '');
    const result = await query(...args);
    if (name !== statement || injected++ > 0) return result;
    const error = new pg.DatabaseError('result is ambiguous (error=rpc error: code = Unavailable)', 0, 'error');
    error.code = '40003';
    error.severity = 'ERROR';
    throw error;
  };
  return new PostgresClaimStore({ pool, schema: schema.name, logger: quiet });
}

const rowsFor = async (keys: readonly string[]) =>
  (await schema.pool.query<{ key: string; token: string }>(`SELECT key, token FROM "${schema.name}".claims WHERE key = ANY($1)`, [keys])).rows;

describe('a claim statement answered 40003 (statement completion unknown) after it committed', () => {
  it('alone: its caller fails, and its claim is undone by token (control)', async () => {
    const store = ambiguousAfterCommit('claim');
    const request = claimRequest();
    const outcome = await store.begin(request, LEASE_MS).then(
      (begun) => ({ won: begun.won }),
      () => ({ rejected: true }),
    );
    await sleep(1_000);
    // Either way, no claim nobody holds is left behind.
    if ('rejected' in outcome) expect(await rowsFor([request.key])).toEqual([]);
    else expect(outcome.won).toBe(true);
  });

  it('in a batch: no caller is told it lost its key to a claim nobody holds, and nothing is left to refuse', async () => {
    const store = ambiguousAfterCommit('claim_batch');
    await store.begin(claimRequest(), LEASE_MS); // first use: checks done, worker noted
    const requests = Array.from({ length: 6 }, () => claimRequest());
    const outcomes = await Promise.all(
      requests.map((request) =>
        store.begin(request, LEASE_MS).then(
          (begun) => ({ key: request.key, won: begun.won, token: begun.claim.token }),
          () => ({ key: request.key, rejected: true as const }),
        ),
      ),
    );
    await sleep(1_000); // any undo in the background has run

    const rows = await rowsFor(requests.map((request) => request.key));
    const lost = outcomes.filter((outcome) => 'won' in outcome && !outcome.won);
    expect(lost, 'callers told the key is held by a live owner: their own batch, under a token nobody holds').toEqual([]);
    const unheld = rows.filter((row) => !outcomes.some((outcome) => 'won' in outcome && outcome.won && outcome.token === row.token));
    expect(unheld, 'claims that no caller holds, left to lapse into IdempotencyOrphanedClaim refusals').toEqual([]);
  });
});
