/**
 * Found in review: 27fef8e's `undoNow` does not close the race it was written for.
 *
 * A claim's INSERT commits but its answer is lost (a Postgres restart), so its caller is told the
 * store was unavailable and calls nothing; the store undoes that ghost claim in the background,
 * once a second. 27fef8e: a retry that finds the ghost undoes it at once and claims the key. But
 * when the background pass deletes the ghost between the retry's read and its `undoNow` (the two
 * run on two connections; under CPU load, the very condition the fix was for, that window is wide),
 * `undoNow` deletes nothing and returns false, and `begin` hands back the row it read, which no
 * longer exists, as `{ won: false, claim }`. Its lease has lapsed by then, so the interceptor
 * treats it as orphaned: `addWaiter` finds no claim (state null, ignored, see the late-release
 * attack) and the workflow gets a non-retryable IdempotencyOrphanedClaim for a charge that was
 * never attempted and a key that nobody holds.
 *
 * The pool is a real pg.Pool. Doctored: the INSERT's answer is taken away as a restart does, the
 * background undos fail for a while (Postgres still coming back), and the retry's read is answered
 * only after the background pass, which then goes through, has deleted the ghost: the overlap of
 * two statements on two connections, made certain.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, inject, it } from 'vitest';
import pg from 'pg';
import { PostgresClaimStore, idempotencyInterceptors } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

const LEASE_MS = 1_000;
const UNDO = /^\s*DELETE FROM .*claims AS claim\s+USING unnest/;

function racingPool(): { pool: pg.Pool; arm: () => void; seen: { ghostDeletedByBackground: boolean; staleRead: boolean } } {
  const real = new pg.Pool({ connectionString: inject('databaseUrl'), connectionTimeoutMillis: 2_000 });
  real.on('error', () => undefined);
  let restartOnNextClaim = false;
  let holdNextRead = false;
  let downUntil = 0;
  let undosRefused = false;
  let insertedAt = 0;
  let ghostDeleted: (() => void) | undefined;
  const ghostGone = new Promise<void>((resolve) => (ghostDeleted = resolve));
  const seen = { ghostDeletedByBackground: false, staleRead: false };
  const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
  const realQuery = (config: unknown, values?: unknown) =>
    (real.query as (c: unknown, v?: unknown) => Promise<pg.QueryResult>)(config, values);
  const query = async (config: unknown, values?: unknown) => {
    if (Date.now() < downUntil) throw refused();
    const name = (config as { name?: string }).name ?? '';
    const text = (config as { text?: string }).text ?? String(config);
    if (UNDO.test(text)) {
      if (undosRefused) throw refused();
      const result = await realQuery(config, values);
      if ((result.rowCount ?? 0) > 0 && holdNextRead === false && insertedAt > 0) {
        seen.ghostDeletedByBackground = true;
        ghostDeleted!();
      }
      return result;
    }
    if (holdNextRead && name.endsWith('_get')) {
      holdNextRead = false;
      // The retry reads the ghost once its lease has lapsed (Temporal's retry came late, as under load) …
      while (Date.now() < insertedAt + LEASE_MS + 300) await sleep(50);
      const read = await realQuery(config, values);
      // … and, while that answer is on its way, the background pass (Postgres is back) deletes the ghost.
      undosRefused = false;
      await ghostGone;
      seen.staleRead = read.rows.length > 0;
      return read;
    }
    const isClaim = name.endsWith('_claim');
    const result = await realQuery(config, values);
    if (isClaim && restartOnNextClaim) {
      restartOnNextClaim = false;
      insertedAt = Date.now();
      downUntil = Date.now() + 500;
      undosRefused = true; // Postgres is still coming back: the background undos fail for now
      holdNextRead = true;
      throw new Error('Connection terminated unexpectedly');
    }
    return result;
  };
  const pool = new Proxy(real, { get: (target, prop, receiver) => (prop === 'query' ? query : Reflect.get(target, prop, receiver)) });
  return { pool, arm: () => void (restartOnNextClaim = true), seen };
}

describe('a retry that meets the ghost claim while the background undo deletes it', () => {
  it('claims the key and charges once, instead of refusing a charge never attempted as orphaned', async () => {
    const { pool, arm, seen } = racingPool();
    const store = new PostgresClaimStore({ pool, schema: schema.name });
    let bodies = 0;
    const activities = { chargeCard: async () => ({ id: `ch_${++bodies}` }) };
    const taskQueue = uniqueName('tq');
    const interceptors = { activity: idempotencyInterceptors({ store, leaseMs: LEASE_MS }) };
    try {
      arm();
      const outcome = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
        const handle = await temporal.client.workflow.start('callActivity', {
          taskQueue,
          workflowId: uniqueName('wf'),
          args: [{ activity: 'chargeCard', args: [{ amountCents: 900 }], maximumAttempts: 10 }],
        });
        return handle.result().then(
          (result) => ({ result }),
          (error: unknown) => ({ failedWith: (error as { cause?: { cause?: { type?: string } } }).cause?.cause?.type }),
        );
      });
      expect(seen).toEqual({ ghostDeletedByBackground: true, staleRead: true }); // the interleaving happened
      // Before a fix: { failedWith: 'IdempotencyOrphanedClaim' }, and the card was never charged.
      expect(outcome, JSON.stringify(outcome)).toEqual({ result: [{ id: 'ch_1' }] });
      expect(bodies).toBe(1);
    } finally {
      await store.close();
      await (pool as pg.Pool).end();
    }
  });
});
