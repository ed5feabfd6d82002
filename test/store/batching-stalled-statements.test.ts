/**
 * Found in review: natural batching lets statements stuck on half-open connections wedge every later
 * claim (and every later record) of the process, on a network that works again.
 *
 * NaturalBatch allows STATEMENTS_IN_FLIGHT per kind and sends the next statement only when one of
 * those settles (or has been out 500 ms: the fix). Here all of them are stranded. Claims and records have no statement timeout (only the lease renewal is
 * bounded, precisely because "a renewal stuck on a half-open socket must not hold up the next
 * one"). So after a failover leaves two pooled connections half-open, the two statements sent on
 * them never settle, and every claim that arrives afterwards queues behind them, however healthy
 * the new connections are: every activity on the worker hangs until Temporal times it out, and
 * its retries hang the same way. `batchStatements: false` does not help: it sets maxBatch to 1
 * but keeps maxInFlight at 2.
 *
 * Before 3156d7e each claim took its own pooled connection: the two stuck callers hung, the
 * third went out on a fresh connection and was answered at once. Records are worse: an activity
 * whose call went out waits forever for `complete`, so its result never reaches Temporal, and the
 * next attempt waits on a claim whose lease this worker keeps renewing.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { PostgresClaimStore } from '../../src/index.js';
import { STATEMENTS_IN_FLIGHT } from '../../src/store/postgres-claim-store.js';
import type { StoreLogger } from '../../src/index.js';
import { claimRequest } from '../support/claims.js';
import { useTestSchema } from '../support/schema.js';
import { TcpProxy } from '../support/tcp-proxy.js';

const schema = useTestSchema(import.meta.filename);
const databaseUrl = new URL(inject('databaseUrl'));
const LEASE_MS = 60_000;
const proxies: TcpProxy[] = [];
const pools: pg.Pool[] = [];
afterAll(async () => {
  // Cut the stuck sockets first: their queries reject, and the pools can end.
  for (const proxy of proxies) proxy.dropConnections();
  await sleep(200);
  for (const pool of pools) await pool.end().catch(() => undefined);
  for (const proxy of proxies) await proxy.stop();
});

const quiet: StoreLogger = { warn: () => undefined, error: () => undefined };

async function storeBehindProxy(options: { batchStatements?: boolean } = {}) {
  const proxy = new TcpProxy(databaseUrl.hostname, Number(databaseUrl.port));
  proxies.push(proxy);
  const url = new URL(databaseUrl);
  url.port = String(await proxy.start());
  const pool = new pg.Pool({ connectionString: url.toString(), max: 10, connectionTimeoutMillis: 2_000 });
  pool.on('error', () => undefined);
  pools.push(pool);
  const store = new PostgresClaimStore({ pool, schema: schema.name, logger: quiet, ...options });
  await store.begin(claimRequest(), LEASE_MS); // first use: schema check, durability check, worker noted
  // Idle connections in the pool for every statement it sends at once, as a busy worker has.
  await Promise.all(Array.from({ length: STATEMENTS_IN_FLIGHT }, () => pool.query('SELECT pg_sleep(0.05)')));
  return { proxy, pool, store };
}

/** As many statements as the store sends at once go out on connections a failover left half-open (nothing they carry arrives). */
async function strandAll<T>(proxy: TcpProxy, send: () => Promise<T>): Promise<void> {
  proxy.stall();
  const stuck = Array.from({ length: STATEMENTS_IN_FLIGHT }, () => send());
  for (const promise of stuck) void promise.catch(() => undefined);
  await sleep(300);
  proxy.flow(); // the network works again: new connections carry statements
}

const within = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([promise.then((value) => ({ settled: true as const, value })), sleep(ms).then(() => ({ settled: false as const }))]);

describe('every statement in flight stuck on a half-open connection', () => {
  it('do not keep a later claim, on a working connection, from being answered', async () => {
    const { proxy, pool, store } = await storeBehindProxy();
    await strandAll(proxy, () => store.begin(claimRequest(), LEASE_MS));

    // The database is reachable through the same pool: a fresh connection answers at once.
    expect((await within(pool.query('SELECT 1 AS one'), 5_000)).settled).toBe(true);

    const later = claimRequest();
    const answer = await within(store.begin(later, LEASE_MS), 10_000);
    expect(answer.settled, 'a claim made after the network recovered is never answered: it queues behind the stuck statements').toBe(true);
  });

  it('do not keep a later claim waiting with batchStatements: false either', async () => {
    const { proxy, pool, store } = await storeBehindProxy({ batchStatements: false });
    await strandAll(proxy, () => store.begin(claimRequest(), LEASE_MS));
    expect((await within(pool.query('SELECT 1 AS one'), 5_000)).settled).toBe(true);

    const answer = await within(store.begin(claimRequest(), LEASE_MS), 10_000);
    expect(answer.settled, 'batchStatements: false still queues a claim behind stuck ones').toBe(true);
  });

  it('do not keep a later record of a call that went out from being written', async () => {
    const { proxy, pool, store } = await storeBehindProxy();
    const claims = (await Promise.all(Array.from({ length: STATEMENTS_IN_FLIGHT + 1 }, () => store.begin(claimRequest(), LEASE_MS)))).map(
      (begun) => begun.claim,
    );
    const last = claims[STATEMENTS_IN_FLIGHT]!;
    let next = 0;
    await strandAll(proxy, () => store.complete(claims[next++]!, defaultPayloadConverter.toPayload('sent')));
    expect((await within(pool.query('SELECT 1 AS one'), 5_000)).settled).toBe(true);
    // A lease renewal (bounded) goes through meanwhile: the store itself can reach Postgres.
    expect((await within(store.renewLeases([last], LEASE_MS, 2_000), 5_000)).settled).toBe(true);

    const recorded = await within(store.complete(last, defaultPayloadConverter.toPayload('sent')), 10_000);
    expect(recorded.settled, "a later call's result is never recorded: it queues behind the stuck records").toBe(true);
  });
});
