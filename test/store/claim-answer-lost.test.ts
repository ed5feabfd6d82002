/**
 * A claim whose INSERT commits while its answer is lost (a Postgres restart, a dropped connection): the
 * caller does not know it holds the key, and nothing has run under it. The store tries the claim again
 * under the same token until Postgres answers, and a claim found under that token is the caller's own.
 *
 * Found in review (before this design): a claim cut this way was left held by nobody, so the promised
 * retry waited out its lease and was refused as IdempotencyOrphanedClaim for a call never made.
 *
 * The pool is a real pg.Pool whose answers are taken away exactly as a restart does: the INSERT runs
 * and commits, its caller gets "Connection terminated unexpectedly", and for a while every statement
 * fails with ECONNREFUSED.
 */
import { describe, expect, inject, it } from 'vitest';
import pg from 'pg';
import { defaultPayloadConverter } from '@temporalio/common';
import { ClaimOperations, PostgresClaimStore, idempotencyInterceptors } from '../../src/index.js';
import { claimRequest } from '../support/claims.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

/**
 * A real pool; `restartOnNextClaim(ms)`: the next claim INSERT commits, its answer is lost, and nothing
 * connects for `ms`. `reclaimDelayMs`: the statement that confirms a claim found under its caller's token
 * waits this long before it is sent.
 */
function restartingPool(reclaimDelayMs = 0): { pool: pg.Pool; restartOnNextClaim: (downMs: number) => void; end: () => Promise<void> } {
  const real = new pg.Pool({ connectionString: inject('databaseUrl'), connectionTimeoutMillis: 2_000 });
  real.on('error', () => undefined);
  let armedForMs: number | undefined;
  let downUntil = 0;
  const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
  const query = async (config: unknown, values?: unknown) => {
    if (Date.now() < downUntil) throw refused();
    const name = (config as { name?: string }).name ?? '';
    if (name.endsWith('_reclaim')) await new Promise((resolve) => setTimeout(resolve, reclaimDelayMs));
    const result = await (real.query as (c: unknown, v?: unknown) => Promise<unknown>)(config, values);
    if (armedForMs !== undefined && name.endsWith('_claim')) {
      downUntil = Date.now() + armedForMs;
      armedForMs = undefined;
      throw new Error('Connection terminated unexpectedly');
    }
    return result;
  };
  const pool = new Proxy(real, { get: (target, prop, receiver) => (prop === 'query' ? query : Reflect.get(target, prop, receiver)) });
  return { pool, restartOnNextClaim: (downMs) => void (armedForMs = downMs), end: () => real.end() };
}

const rowsOf = async (key: string) =>
  (await schema.pool.query<{ token: string; state: string }>(`SELECT token, state FROM "${schema.name}".claims WHERE key = $1`, [key])).rows;

describe('a claim whose answer was lost', () => {
  it('is the caller\'s own once Postgres answers: the activity runs once, on the attempt that claimed', async () => {
    const { pool, restartOnNextClaim, end } = restartingPool();
    const store = new PostgresClaimStore({ pool, schema: schema.name });
    let bodies = 0;
    const activities = { chargeCard: async () => ({ id: `ch_${++bodies}` }) };
    const taskQueue = uniqueName('tq');
    const interceptors = { activity: idempotencyInterceptors({ store, leaseMs: 5_000 }) };
    try {
      restartOnNextClaim(1_000);
      const result = await temporal.withWorker({ taskQueue, activities, interceptors }, () =>
        temporal.client.workflow.execute('callActivity', {
          taskQueue,
          workflowId: uniqueName('wf'),
          args: [{ activity: 'chargeCard', args: [{ amountCents: 500 }], maximumAttempts: 1 }],
        }),
      );
      // Before: the attempt failed as IdempotencyStoreUnavailable, and its retry was refused as orphaned.
      expect(result).toEqual([{ id: 'ch_1' }]);
      expect(bodies).toBe(1);
    } finally {
      await end();
    }
  });

  it('is found under the token the caller drew, and won; the key stays held against anyone else', async () => {
    const { pool, restartOnNextClaim, end } = restartingPool();
    const store = new PostgresClaimStore({ pool, schema: schema.name });
    try {
      const request = claimRequest();
      restartOnNextClaim(500);
      const begun = await store.begin(request, 60_000);
      expect(begun).toMatchObject({ won: true, claim: { key: request.key, attempt: 1 } });
      expect(await rowsOf(request.key)).toEqual([{ token: begun.claim.token, state: 'claimed' }]);
      const other = await store.begin({ ...request, attempt: 2 }, 60_000);
      expect(other).toMatchObject({ won: false, claim: { token: begun.claim.token } });
    } finally {
      await end();
    }
  });

  it('is not won back once another attempt took it over: a stale token never wins', async () => {
    // The caller finds its own claim, and its lease lapses before the confirming statement is sent.
    const { pool, restartOnNextClaim, end } = restartingPool(1_500);
    const cut = new PostgresClaimStore({ pool, schema: schema.name });
    const other = new PostgresClaimStore({ pool: schema.pool, schema: schema.name });
    try {
      const request = claimRequest();
      restartOnNextClaim(200);
      const cutBegin = cut.begin(request, 1_000);
      await new Promise((resolve) => setTimeout(resolve, 1_100)); // the cut claim's lease has lapsed
      const found = await other.begin({ ...request, attempt: 2 }, 60_000);
      expect(found).toMatchObject({ won: false, claim: { state: 'claimed', attempt: 1, ownerAlive: false } });
      const taken = await other.takeOver(found.claim, { ...request, attempt: 2 }, 60_000);
      expect(taken).not.toBeNull();
      const begun = await cutBegin;
      expect(begun).toMatchObject({ won: false, claim: { token: taken!.token, attempt: 2 } });
      expect(await rowsOf(request.key)).toEqual([{ token: taken!.token, state: 'claimed' }]);
    } finally {
      await end();
    }
  });

  it('resolved by an operator meanwhile is answered from that record, not tried again until the caller gives up', async () => {
    const { pool, restartOnNextClaim, end } = restartingPool();
    const store = new PostgresClaimStore({ pool, schema: schema.name });
    const operations = new ClaimOperations(schema.pool, { schema: schema.name });
    try {
      const request = claimRequest();
      restartOnNextClaim(1_000);
      const begin = store.begin(request, 60_000);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const receipt = defaultPayloadConverter.toPayload({ id: 'ch_from_the_vendor' });
      await operations.resolve(request.key, receipt, { force: true, reason: 'the vendor has it' });
      // Before: three reads of its own token on a completed row, then ClaimContendedError ("nothing was called").
      expect(await begin).toMatchObject({ won: false, claim: { state: 'completed', key: request.key } });
    } finally {
      await end();
    }
  });

  it('that Postgres never answers for the whole lease is given up, and stays for the orphan path', async () => {
    const { pool, restartOnNextClaim, end } = restartingPool();
    const store = new PostgresClaimStore({ pool, schema: schema.name });
    try {
      const request = claimRequest();
      restartOnNextClaim(5_000);
      const started = Date.now();
      await expect(store.begin(request, 1_000)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
      expect(Date.now() - started).toBeLessThan(4_000);
      // Held by nobody: a later attempt finds it claimed, its lease lapsed, as a worker that died after claiming leaves it.
      expect((await rowsOf(request.key)).map((row) => row.state)).toEqual(['claimed']);
    } finally {
      await end();
    }
  });
});
