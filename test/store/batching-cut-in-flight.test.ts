/**
 * Found in review: a claim batch lost in flight is "undone by token" before it has committed, and then
 * commits: the claims stay, held by nobody, and every caller (told it failed, retryably) is later
 * refused as IdempotencyOrphanedClaim for a call that never went out.
 *
 * When the connection is cut (a network blip, a proxy or NAT dropping it: the TcpProxy's
 * dropConnections, as resilience.test.ts does) while the statement waits inside Postgres (here
 * on a row an operator's transaction is deleting; the claim-admission lock `keys activate` holds
 * while it signs, or any slow commit, will do), the backend lives on: it does not read its socket while it waits, and it
 * already holds the whole Bind/Execute/Sync. The store's `undoLater` sends its DELETE at once on a
 * fresh connection; it deletes nothing (the INSERT has not committed), succeeds, and is never
 * tried again. Then the lock is released, the orphaned backend inserts the batch and commits.
 *
 * The same flaw is in the one-claim path (insertOrUndo); natural batching carries it to every
 * claim of a batch (up to 100 callers at once). Postgres would notice the dead client only with
 * client_connection_check_interval, which nothing sets.
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
        (begun) => ({ key: request.key, won: begun.won }),
        (error: unknown) => ({ key: request.key, failed: String(error) }),
      );
    // Alone, at once: as many as go at once, each waiting on the operator.
    const alone = held.slice(0, STATEMENTS_IN_FLIGHT).map((request) => outcome({ ...claimRequest(), key: request.key }));
    // Queued meanwhile, and sent together once the first have been out 500 ms: a batch, with one key that waits.
    const batched = [{ ...claimRequest(), key: held[STATEMENTS_IN_FLIGHT]!.key }, ...Array.from({ length: 6 }, () => claimRequest())];
    const inBatch = batched.map(outcome);
    await sleep(1_000); // the batch is out, waiting on the operator's row
    proxy.dropConnections(); // the network drops this worker's connections; Postgres's backends live on
    const answers = await Promise.all([...alone, ...inBatch]);
    const failed = answers.filter((answer) => 'failed' in answer).map((answer) => answer.key);
    // Told: nothing was claimed, retry (IdempotencyStoreUnavailable): those that waited alone, and the batch.
    expect(failed).toEqual(expect.arrayContaining([...held.slice(0, STATEMENTS_IN_FLIGHT).map((request) => request.key), ...batched.map((request) => request.key)]));
    await sleep(1_000); // the store's undo by token has run, and found nothing yet to delete

    await operator.query('COMMIT'); // the operator's transaction ends; the cut backends go on and commit
    await sleep(1_500);

    const { rows } = await schema.pool.query<{ key: string; claimed_by: string }>(
      `SELECT key, state, claimed_by FROM "${schema.name}".claims WHERE key = ANY($1)`,
      [failed],
    );
    expect(rows, 'claims whose callers were told they failed, held by nobody: each retry will be refused as orphaned').toEqual([]);
  });
});
