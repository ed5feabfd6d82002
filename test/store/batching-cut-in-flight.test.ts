/**
 * Claims cut off while they wait inside Postgres: the connection is dropped (a network blip, a proxy or
 * NAT dropping it: the TcpProxy's dropConnections) while the statement waits on a row an operator's
 * transaction is deleting (or any slow commit). The backend lives on: it does not read its socket while
 * it waits, and it already holds the whole Bind/Execute/Sync, so it commits later, unanswered.
 *
 * Found in review (before claims were tried again under their own token): such claims, "undone by token"
 * before they had committed, then committed, held by nobody, and every caller (told it failed) was later
 * refused as IdempotencyOrphanedClaim for a call that never went out. Natural batching carries the cut to
 * every claim of a batch (up to 100 callers at once).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { PostgresClaimStore } from '../../src/index.js';
import { STATEMENTS_IN_FLIGHT } from '../../src/store/postgres-claim-store.js';
import type { StoreLogger } from '../../src/index.js';
import { claimRequest } from '../support/claims.js';
import { useTestSchema } from '../support/schema.js';
import { poolThroughProxy } from '../support/tcp-proxy.js';

const schema = useTestSchema(import.meta.filename);
const LEASE_MS = 30_000;
const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});
const quiet: StoreLogger = { warn: () => undefined, error: () => undefined };

describe('claims cut off while they wait inside Postgres', () => {
  it('are not left behind, held by nobody, once the cut backends commit', async () => {
    const { proxy, pool } = await poolThroughProxy(cleanups, 10);
    const store = new PostgresClaimStore({ pool, schema: schema.name, logger: quiet });
    await store.begin(claimRequest(), LEASE_MS); // first use: checks done, worker noted

    // Committed claims that an operator's transaction is deleting (a `release`, a `prune`, a psql session):
    // a claim for either key waits inside Postgres until that transaction ends.
    // One for each statement the store sends at once, and one more for the batch queued behind them.
    const held = Array.from({ length: STATEMENTS_IN_FLIGHT + 1 }, () => claimRequest());
    for (const request of held) await store.begin(request, LEASE_MS);
    const operator = await schema.pool.connect();
    await operator.query('BEGIN');
    cleanups.push(async () => {
      await operator.query('ROLLBACK').catch(() => undefined);
      operator.release();
    });
    await operator.query(`DELETE FROM "${schema.name}".claims WHERE key = ANY($1)`, [held.map((request) => request.key)]);

    const outcome = (request: ReturnType<typeof claimRequest>) =>
      store.begin(request, LEASE_MS).then(
        (begun) => (begun.won ? { key: request.key, token: begun.claim.token } : { key: request.key, lost: begun.claim.token }),
        (error: unknown) => ({ key: request.key, failed: String(error) }),
      );
    // Alone, at once: as many as go at once, each waiting on the operator.
    const alone = held.slice(0, STATEMENTS_IN_FLIGHT).map((request) => outcome({ ...claimRequest(), key: request.key }));
    // Queued meanwhile, and sent together once the first have been out 500 ms: a batch, with one key that waits.
    const batched = [{ ...claimRequest(), key: held[STATEMENTS_IN_FLIGHT]!.key }, ...Array.from({ length: 6 }, () => claimRequest())];
    const inBatch = batched.map(outcome);
    await sleep(1_000); // the batch is out, waiting on the operator's row
    proxy.dropConnections(); // the network drops this worker's connections; Postgres's backends live on
    await sleep(1_000); // the callers try again, under their own tokens, and wait on the operator's row too
    await operator.query('COMMIT'); // the operator's transaction ends; the cut backends go on and commit

    const answers = await Promise.all([...alone, ...inBatch]);
    // Each caller holds its key, whichever of its tries inserted it: none is told it failed.
    expect(answers.filter((answer) => !('token' in answer))).toEqual([]);
    const keys = answers.map((answer) => answer.key);
    const { rows } = await schema.pool.query<{ key: string; token: string }>(`SELECT key, token FROM "${schema.name}".claims WHERE key = ANY($1)`, [keys]);
    // No claim held by nobody: every row is under the token of the caller that won it.
    expect(new Map(rows.map((row) => [row.key, row.token]))).toEqual(new Map(answers.map((answer) => [answer.key, 'token' in answer ? answer.token : ''])));
  });
});
