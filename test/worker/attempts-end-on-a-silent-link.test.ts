/**
 * Every statement a refusal, a takeover or the store's checks wait on ends, on a link gone silent.
 *
 * Found in review of 91c7d93 ("every worker statement ... waits 10 s at most for its answer"): only the
 * statements that go through `runStatement` got a `query_timeout`. The worker's other statements still
 * go out through `pool.query` with no bound: `takeOver` (a claim statement: it moves a claim to the
 * caller's token), `addWaiter` (every refusal notes its workflow first), `waitersToTell`, `waitersTold`.
 * A statement whose bytes a lossy partition dropped is never answered (pg sets no timeout, and a
 * silent connection stays open), so the attempt behind one of these hangs until the process ends:
 * the very hang 91c7d93 set out to end, on the refusal path and on the takeover path.
 *
 * Real Postgres behind a proxy that stalls (bytes dropped, sockets kept open), stalled right after the
 * attempt's claim read is answered; no Temporal server: attempts run in MockActivityEnvironments.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { OutcomeUnknownError, PostgresClaimStore } from '../../src/index.js';
import type { StoreLogger } from '../../src/index.js';
import { IdempotentActivityEnvironment } from '../../src/testing/index.js';
import { useTestSchema } from '../support/schema.js';
import { poolThroughProxy } from '../support/tcp-proxy.js';
import type { TcpProxy } from '../support/tcp-proxy.js';

const schema = useTestSchema(import.meta.filename);
const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});
const quiet: StoreLogger = { warn: () => undefined, error: () => undefined };

/** The pool, whose link to Postgres stalls as soon as the begin's read of the existing claim is answered. */
function stallAfterClaimRead(pool: pg.Pool, proxy: TcpProxy): pg.Pool {
  const query = async (config: unknown, values?: unknown) => {
    const result = await (pool.query as (c: unknown, v?: unknown) => Promise<unknown>)(config, values);
    const name = (config as { name?: string } | null)?.name ?? '';
    if (name.endsWith('_get')) proxy.stall(); // the partition starts: nothing after this is carried
    return result;
  };
  return new Proxy(pool, { get: (target, prop, receiver) => (prop === 'query' ? query : Reflect.get(target, prop, receiver)) });
}

/** An earlier attempt that may have called: its claim is kept `unknown`. */
async function leaveUnknownClaim(info: object, activityType: string): Promise<void> {
  const store = new PostgresClaimStore({ pool: schema.pool, schema: schema.name, logger: quiet });
  const first = new IdempotentActivityEnvironment({ store, info, activities: { [activityType]: { vendorDedup: true } } });
  const sent = async (_amount: number) => {
    throw new OutcomeUnknownError('the request was sent; no answer came');
  };
  await first
    .attempt({ activityType, attempt: 1 })
    .run(sent, 100)
    .catch(() => undefined);
}

/** Attempt 2 of `activityType`: how it ended, or 'still hanging' after 30 s (then the proxy stops, which unsticks it). */
async function endedWithin30s(
  environment: IdempotentActivityEnvironment,
  activityType: string,
  activity: (amount: number) => Promise<unknown>,
  proxy: TcpProxy,
): Promise<{ ended: string; hungMs: number }> {
  const started = Date.now();
  const attempt = environment
    .attempt({ activityType, attempt: 2 })
    .run(activity, 100)
    .then(
      () => 'answered',
      (error: { type?: string }) => error.type ?? String(error),
    );
  const ended = await Promise.race([attempt, sleep(30_000).then(() => 'still hanging' as const)]);
  const hungMs = Date.now() - started;
  await proxy.stop();
  await attempt;
  return { ended, hungMs };
}

describe('statements on a link that went silent', () => {
  it('a refusal (its addWaiter) still ends the attempt', { timeout: 90_000 }, async () => {
    const info = { workflowExecution: { workflowId: `wf-refused-${Date.now()}`, runId: 'run-1' }, startToCloseTimeoutMs: 60_000 };
    await leaveUnknownClaim(info, 'chargeCard');
    const { proxy, pool } = await poolThroughProxy(cleanups, 4);
    const store = new PostgresClaimStore({ pool: stallAfterClaimRead(pool, proxy), schema: schema.name, logger: quiet });
    await store.keySalt(); // schema checks done before the partition
    const environment = new IdempotentActivityEnvironment({ store, info });
    let calls = 0;
    const chargeCard = async (_amount: number) => (calls++, 'charged');

    const { ended, hungMs } = await endedWithin30s(environment, 'chargeCard', chargeCard, proxy);
    expect(ended, `the refused attempt was still hanging after ${hungMs} ms (addWaiter has no query_timeout)`).not.toBe('still hanging');
    expect(calls).toBe(0);
  });

  it('a takeover (vendorDedup) still ends the attempt', { timeout: 90_000 }, async () => {
    const info = { workflowExecution: { workflowId: `wf-takeover-${Date.now()}`, runId: 'run-1' }, startToCloseTimeoutMs: 60_000 };
    await leaveUnknownClaim(info, 'sendSms');
    const { proxy, pool } = await poolThroughProxy(cleanups, 4);
    const store = new PostgresClaimStore({ pool: stallAfterClaimRead(pool, proxy), schema: schema.name, logger: quiet });
    await store.keySalt();
    const environment = new IdempotentActivityEnvironment({ store, info, activities: { sendSms: { vendorDedup: true } } });
    let calls = 0;
    const sendSms = async (_amount: number) => (calls++, 'sent');

    const { ended, hungMs } = await endedWithin30s(environment, 'sendSms', sendSms, proxy);
    expect(ended, `the taking-over attempt was still hanging after ${hungMs} ms (takeOver has no query_timeout)`).not.toBe('still hanging');
  });

  it('a schema check stuck on a silent connection does not hang every later attempt, after the link is back', { timeout: 90_000 }, async () => {
    const info = { workflowExecution: { workflowId: `wf-check-${Date.now()}`, runId: 'run-1' }, startToCloseTimeoutMs: 60_000 };
    const { proxy, pool } = await poolThroughProxy(cleanups, 4);
    await pool.query('SELECT 1'); // a pooled connection, open before the partition
    const store = new PostgresClaimStore({ pool, schema: schema.name, logger: quiet });
    const environment = new IdempotentActivityEnvironment({ store, info });
    let calls = 0;
    const chargeCard = async (_amount: number) => (calls++, 'charged');

    proxy.stall();
    const firstAttempt = environment.attempt({ activityType: 'chargeCard', attempt: 1 }).run(chargeCard, 100).catch(() => 'failed');
    await sleep(1_000);
    proxy.flow(); // the partition is over: new connections go through

    const { ended, hungMs } = await endedWithin30s(environment, 'chargeCard', chargeCard, proxy);
    await firstAttempt;
    expect(ended, `an attempt begun after the link came back was still hanging after ${hungMs} ms (the store's one-time checks have no timeout, and their promise is shared)`).not.toBe('still hanging');
  });
});
