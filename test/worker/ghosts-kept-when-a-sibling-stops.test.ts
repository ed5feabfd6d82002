/**
 * Found in review: one worker on a shared store stops, and the store forgets the other worker's ghosts.
 *
 * Two workers in one process share one PostgresClaimStore (two task queues; the plugin's docs and
 * ClaimListener.stop() say a store is shared, "a later follow() (another worker sharing the store)
 * connects again"). When one of them stops (a deploy of one queue, a worker recreated), the plugin's
 * runWorker calls store.close(), and ClaimUndo.stop() does "one last look" and then clears every
 * pending undo: the still-running worker's claims whose insert was cut in flight (callers told it
 * failed, retryably; the backend still waiting inside Postgres) are forgotten. When the cut backend
 * commits afterwards, the claim is held by nobody: the retry finds it, it is no ghost any more to
 * begin(), so the call that never went out is waited on and then refused (IdempotencyOrphanedClaim).
 *
 * Without the other worker's stop, the same retry wins the claim (the undo pass, or begin's undoNow,
 * deletes the ghost): that is the expected behaviour.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { IdempotencyPlugin, PostgresClaimStore } from '../../src/index.js';
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

describe('a worker stopping on a store another worker still uses', () => {
  it('does not strand the other worker\'s cut claims as orphans', async () => {
    const { proxy, pool } = await poolThroughProxy(cleanups, 10);
    const store = new PostgresClaimStore({ pool, schema: schema.name, logger: quiet });
    await store.begin(claimRequest(), LEASE_MS); // first use: checks done, worker noted

    // A committed claim an operator's transaction is deleting: a claim for its key waits inside Postgres.
    const held = claimRequest();
    await store.begin(held, LEASE_MS);
    const operator = await schema.pool.connect();
    await operator.query('BEGIN');
    cleanups.push(async () => {
      await operator.query('ROLLBACK').catch(() => undefined);
      operator.release();
    });
    await operator.query(`DELETE FROM "${schema.name}".claims WHERE key = $1`, [held.key]);

    // Worker B's attempt claims that key: its statement waits on the operator's row.
    const request = { ...claimRequest(), key: held.key };
    const first = store.begin(request, LEASE_MS).then(
      () => 'answered',
      (error: unknown) => `failed: ${String(error)}`,
    );
    await sleep(500);
    proxy.dropConnections(); // the network drops the connection; the backend lives on, waiting
    expect(await first).toMatch(/^failed/); // told: nothing claimed, retry (IdempotencyStoreUnavailable)
    await sleep(300);

    // Worker A, on the same store, stops: IdempotencyPlugin.runWorker closes the store when its worker ends.
    const plugin = new IdempotencyPlugin({ store });
    const workerA = { options: { interceptors: { activity: [] } } } as never;
    await plugin.runWorker(workerA, async () => undefined);

    await operator.query('COMMIT'); // the cut backend goes on and commits worker B's claim
    await sleep(1_500);

    // Worker B's retry of the same call (nothing went out): it must get the key.
    const retry = await store.begin({ ...request, attempt: 2 }, LEASE_MS);
    expect(
      { won: retry.won, heldBy: retry.won ? null : { state: retry.claim.state, attempt: retry.claim.attempt, ownerAlive: retry.claim.ownerAlive } },
      'the retry of a call that never went out finds its own cut claim, held by nobody: it waits out the lease and is refused as orphaned',
    ).toEqual({ won: true, heldBy: null });
  });
});
