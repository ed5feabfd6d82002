/**
 * Natural batching on real Postgres: claims and records that arrive together
 * go out in fewer statements, and each caller gets exactly the answer it would
 * have got alone: the same claim, the same winner, its own error.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { ClaimOperations, PostgresClaimStore } from '../../src/index.js';
import type { Claim, ClaimRequest } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { claimRequest } from '../support/claims.js';

const schema = useTestSchema(import.meta.filename);
const LEASE_MS = 30_000;
const pools: pg.Pool[] = [];
afterAll(async () => void (await Promise.all(pools.map((pool) => pool.end()))));

/** A store on a pool of its own, counting the statements it sends by name. */
function countingStore(options: { batchStatements?: boolean } = {}) {
  const pool = new pg.Pool({ connectionString: inject('databaseUrl'), max: 10 });
  pools.push(pool);
  const sent = new Map<string, number>();
  const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
  (pool as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = (...args: unknown[]) => {
    const name = (args[0] as { name?: string } | undefined)?.name?.replace(/^ti_[0-9a-f]+_/, '');
    if (name) sent.set(name, (sent.get(name) ?? 0) + 1);
    return query(...args);
  };
  return { store: new PostgresClaimStore({ pool, schema: schema.name, ...options }), sent };
}

const claimedRows = async (keys: readonly string[]) =>
  (await schema.pool.query(`SELECT key, state, workflow_id, attempt FROM "${schema.name}".claims WHERE key = ANY($1) ORDER BY key`, [keys])).rows;

/** What a caller learns of its own claim, without what differs between any two claims (token, times). */
function comparable(claim: Claim) {
  const { token: _token, claimedAt: _claimedAt, leaseExpiresAt: _lease, deadlineAt: _deadline, readAt: _readAt, ...rest } = claim;
  return rest;
}

describe('natural batching of claims', () => {
  it('sends many concurrent claims in fewer statements, and each caller gets the claim it would have got alone', async () => {
    const batched = countingStore();
    const alone = countingStore({ batchStatements: false });
    const arguments_ = defaultPayloadConverter.toPayload({ to: '+15550001', body: 'quoted "text" and \\ back' });
    const requests = Array.from({ length: 40 }, (_, index) =>
      claimRequest({ attempt: index + 1, deadlineMs: index % 2 ? 60_000 : null, arguments: index % 3 ? arguments_ : null }),
    );
    const together = await Promise.all(requests.map((request) => batched.store.begin(request, LEASE_MS)));
    const single = await Promise.all(requests.map((request) => alone.store.begin({ ...request, key: `${request.key}-alone` }, LEASE_MS)));

    expect(together.every((begun) => begun.won)).toBe(true);
    expect((batched.sent.get('claim') ?? 0) + (batched.sent.get('claim_batch') ?? 0)).toBeLessThan(40);
    expect(batched.sent.get('claim_batch')).toBeGreaterThan(0);
    expect(alone.sent.get('claim')).toBe(40);
    expect(alone.sent.get('claim_batch')).toBeUndefined();
    together.forEach((begun, index) => {
      expect(comparable(begun.claim)).toEqual({ ...comparable(single[index]!.claim), key: requests[index]!.key });
      expect(begun.claim.deadlineAt === null).toBe(requests[index]!.deadlineMs === null);
    });
    expect(new Set(together.map((begun) => begun.claim.token)).size).toBe(40);
    const operations = new ClaimOperations(schema.pool, { schema: schema.name });
    for (const request of requests) {
      const recorded = await operations.recordedArguments(request.key);
      expect(recorded && defaultPayloadConverter.fromPayload(recorded)).toEqual(request.arguments ? { to: '+15550001', body: 'quoted "text" and \\ back' } : null);
    }
  });

  it('lets exactly one of the callers of a key win, in one batch or across batches; the others see its claim', async () => {
    const { store } = countingStore();
    const earlier = claimRequest();
    await store.begin(earlier, LEASE_MS);
    const fresh = Array.from({ length: 10 }, () => claimRequest());
    const requests: ClaimRequest[] = [...fresh, ...fresh.map((request) => ({ ...request, workflowId: 'a rival' })), { ...earlier, workflowId: 'late' }];
    const begun = await Promise.all(requests.map((request) => store.begin(request, LEASE_MS)));

    for (const request of [...fresh, earlier]) {
      const forKey = begun.filter((result) => result.claim.key === request.key);
      expect(forKey.filter((result) => result.won).length, request.key).toBe(request === earlier ? 0 : 1);
      expect(new Set(forKey.map((result) => result.claim.token)).size).toBe(1);
    }
    expect((await claimedRows(fresh.map((request) => request.key))).length).toBe(10);
  });

  // Four statements go at once, and batches queue behind them: claims of one key, arriving in waves while
  // earlier batches are still in Postgres, land in several statements at once.
  it('lets exactly one caller of a key win when several batches in flight at once carry it', async () => {
    const { store, sent } = countingStore();
    const keys = Array.from({ length: 30 }, () => claimRequest());
    const begun: Array<Promise<Awaited<ReturnType<PostgresClaimStore['begin']>>>> = [];
    for (let wave = 0; wave < 8; wave++) {
      // Each wave in another order, so two statements take a key's row in different positions of their arrays.
      const order = wave % 2 ? [...keys].reverse() : keys;
      for (const request of order) begun.push(store.begin({ ...request, workflowId: `wave-${wave}` }, LEASE_MS));
      await new Promise((resolve) => setImmediate(resolve));
    }
    const results = await Promise.all(begun);
    for (const request of keys) {
      const forKey = results.filter((result) => result.claim.key === request.key);
      expect(forKey.filter((result) => result.won).length, request.key).toBe(1);
      expect(new Set(forKey.map((result) => result.claim.token)).size).toBe(1);
    }
    expect(sent.get('claim_batch') ?? 0, 'some claims went in batches').toBeGreaterThan(1);
  });

  it("keeps one request's error its own: the rest of its batch is claimed", async () => {
    const { store, sent } = countingStore();
    const requests = Array.from({ length: 20 }, () => claimRequest());
    requests[7] = { ...requests[7]!, workflowId: 'nul \u0000 in an id' };
    requests[13] = { ...requests[13]!, activityType: 'nul \u0000 in a type' };
    const outcomes = await Promise.allSettled(requests.map((request) => store.begin(request, LEASE_MS)));

    expect(sent.get('claim_batch')).toBeGreaterThan(0);
    expect(outcomes[7]).toMatchObject({ status: 'rejected', reason: { code: '22021' } });
    expect(outcomes[13]).toMatchObject({ status: 'rejected', reason: { code: '22021' } });
    const won = outcomes.filter((outcome) => outcome.status === 'fulfilled' && outcome.value.won);
    expect(won).toHaveLength(18);
    expect((await claimedRows(requests.map((request) => request.key))).length).toBe(18);
  });
});

describe('natural batching of records', () => {
  it('records many concurrent results in fewer statements, each its own; a claim no longer held is not recorded', async () => {
    const { store, sent } = countingStore();
    const claims = (await Promise.all(Array.from({ length: 30 }, () => store.begin(claimRequest(), LEASE_MS)))).map((begun) => begun.claim);
    const notHeld = { ...claims[5]!, token: '00000000-0000-4000-8000-000000000000' };
    const recorded = await Promise.all(
      claims.map((claim, index) => store.complete(index === 5 ? notHeld : claim, defaultPayloadConverter.toPayload({ receipt: index }))),
    );

    expect(sent.get('complete_batch')).toBeGreaterThan(0);
    expect((sent.get('complete') ?? 0) + (sent.get('complete_batch') ?? 0)).toBeLessThan(30);
    expect(recorded).toEqual(claims.map((_, index) => index !== 5));
    for (const [index, claim] of claims.entries()) {
      const found = await store.get(claim.key);
      if (index === 5) expect(found).toMatchObject({ state: 'claimed', token: claim.token });
      else expect(defaultPayloadConverter.fromPayload(found!.result!)).toEqual({ receipt: index });
    }
  });

  it('records each result once when several record batches in flight at once carry the same claims', async () => {
    const { store } = countingStore();
    const claims = (await Promise.all(Array.from({ length: 40 }, () => store.begin(claimRequest(), LEASE_MS)))).map((begun) => begun.claim);
    const recorded: Array<Promise<{ key: string; wave: string; told: boolean }>> = [];
    for (let wave = 0; wave < 5; wave++) {
      const order = wave % 2 ? [...claims].reverse() : claims;
      for (const claim of order) {
        const told = store.complete(claim, defaultPayloadConverter.toPayload(`wave-${wave}`));
        recorded.push(told.then((ok) => ({ key: claim.key, wave: `wave-${wave}`, told: ok })));
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    const answers = (await Promise.all(recorded)).filter(({ told }) => told);
    expect(answers.length, 'one caller per claim told its result was recorded').toBe(claims.length);
    // The result kept is the one whose caller was told so.
    const kept = await Promise.all(claims.map(async ({ key }) => ({ key, wave: defaultPayloadConverter.fromPayload((await store.get(key))!.result!) })));
    expect(kept.sort((a, b) => a.key.localeCompare(b.key))).toEqual(answers.map(({ key, wave }) => ({ key, wave })).sort((a, b) => a.key.localeCompare(b.key)));
  });

  it('never deadlocks with lease renewals of the same claims, whatever order each takes them in', async () => {
    const { store } = countingStore();
    for (let round = 0; round < 5; round++) {
      const claims = (await Promise.all(Array.from({ length: 60 }, () => store.begin(claimRequest(), LEASE_MS)))).map((begun) => begun.claim);
      const held = claims.map(({ key, token }) => ({ key, token }));
      const renewals = Array.from({ length: 6 }, (_, index) => store.renewLeases(index % 2 ? [...held].reverse() : held, LEASE_MS));
      const records = claims.map((claim) => store.complete(claim, defaultPayloadConverter.toPayload('ok')));
      await expect(Promise.all([...renewals, ...records])).resolves.toBeDefined();
    }
  });
});
