/**
 * Found in review: Postgres restarts while a claim's INSERT commits.
 *
 * The INSERT commits, the connection dies before the answer arrives, and the store tries once to
 * undo the claim by its token while Postgres is still coming back; the undo fails and is dropped
 * (`.catch(() => undefined)`). The attempt fails with IdempotencyStoreUnavailable, "Nothing was
 * called; Temporal will retry." The retry then finds the ghost claim, waits for its lease to
 * lapse, and refuses with the non-retryable IdempotencyOrphanedClaim ("the call may already have
 * gone out") for a call that was never made: the promised retry becomes a page for a person.
 *
 * The pool below is a real pg.Pool whose answers are taken away exactly as a restart does: the
 * INSERT runs and commits, its caller gets "Connection terminated unexpectedly", and for the
 * next half second every statement fails with ECONNREFUSED.
 */
import { describe, expect, inject, it } from 'vitest';
import pg from 'pg';
import { IdempotencyStoreUnavailable, PostgresClaimStore, idempotencyInterceptors } from '../../src/index.js';
import { claimRequest } from '../support/claims.js';
import { useTestSchema } from '../support/schema.js';
import { pendingActivityFailure, uniqueName, useTemporal } from '../support/temporal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

function restartingPool(): { pool: pg.Pool; restartOnNextClaim: () => void; refuseUndos: (refused: boolean) => void } {
  const real = new pg.Pool({ connectionString: inject('databaseUrl'), connectionTimeoutMillis: 2_000 });
  real.on('error', () => undefined);
  let armed = false;
  let downUntil = 0;
  let undosRefused = false;
  const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
  const query = async (config: unknown, values?: unknown) => {
    if (Date.now() < downUntil) throw refused();
    const name = (config as { name?: string; text?: string }).name ?? '';
    const text = (config as { text?: string }).text ?? String(config);
    if (undosRefused && /^\s*DELETE FROM .*claims AS claim\s+USING unnest/.test(text)) throw refused();
    const isClaim = name.endsWith('_claim') || /INSERT INTO .*claims/.test(text);
    const result = await (real.query as (c: unknown, v?: unknown) => Promise<unknown>)(config, values);
    if (isClaim && armed) {
      armed = false;
      downUntil = Date.now() + 500; // the server is restarting: the undo fails too
      throw new Error('Connection terminated unexpectedly');
    }
    return result;
  };
  const pool = new Proxy(real, { get: (target, prop, receiver) => (prop === 'query' ? query : Reflect.get(target, prop, receiver)) });
  return { pool, restartOnNextClaim: () => void (armed = true), refuseUndos: (value) => void (undosRefused = value) };
}

describe('a Postgres restart while a claim commits', () => {
  it('the promised retry runs the activity once, instead of refusing it as orphaned', async () => {
    const { pool, restartOnNextClaim } = restartingPool();
    const store = new PostgresClaimStore({ pool, schema: schema.name });
    let bodies = 0;
    const activities = { chargeCard: async () => ({ id: `ch_${++bodies}` }) };
    const taskQueue = uniqueName('tq');
    const interceptors = { activity: idempotencyInterceptors({ store, leaseMs: 1_000 }) };
    try {
      restartOnNextClaim();
      const outcome = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
        const handle = await temporal.client.workflow.start('callActivity', {
          taskQueue,
          workflowId: uniqueName('wf'),
          args: [{ activity: 'chargeCard', args: [{ amountCents: 500 }], maximumAttempts: 5 }],
        });
        // The first attempt is told the store was unavailable and that Temporal will retry.
        const first = await pendingActivityFailure(handle, (failure) => failure.type === IdempotencyStoreUnavailable);
        expect(first.nonRetryable).toBe(false);
        return handle.result().then(
          (result) => ({ result }),
          (error: unknown) => ({ failedWith: (error as { cause?: { cause?: { type?: string } } }).cause?.cause?.type }),
        );
      });
      // Before the fix: { failedWith: 'IdempotencyOrphanedClaim' }, and the card was never charged.
      expect(outcome, JSON.stringify(outcome)).toEqual({ result: [{ id: 'ch_1' }] });
      expect(bodies).toBe(1);
    } finally {
      await store.close();
      await (pool as pg.Pool).end();
    }
  });

  it('a retry that finds the claim the store is still undoing claims the key at once, whatever its lease says', async () => {
    const { pool, restartOnNextClaim, refuseUndos } = restartingPool();
    const store = new PostgresClaimStore({ pool, schema: schema.name });
    try {
      const request = claimRequest();
      restartOnNextClaim();
      refuseUndos(true); // every undo the store tries in the background fails, as if the restart took long
      await expect(store.begin(request, 60_000)).rejects.toThrow(/Connection terminated unexpectedly/);
      await new Promise((resolve) => setTimeout(resolve, 600)); // the restart is over; only the undos still fail
      expect((await store.get(request.key))?.state).toBe('claimed'); // the ghost: committed, nobody holds it
      // The retry comes first, on this worker: it must not wait for the ghost's 60 s lease, nor refuse it.
      await expect(store.begin(request, 60_000)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
      refuseUndos(false);
      const retried = await store.begin({ ...request, attempt: 2 }, 60_000);
      expect(retried).toMatchObject({ won: true, claim: { attempt: 2 } });
    } finally {
      await store.close();
      await (pool as pg.Pool).end();
    }
  });
});
