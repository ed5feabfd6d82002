/**
 * Bad inputs through the public API, on a real worker and real Postgres: each
 * ends in a clear error that names the problem, and no external call is made
 * without a durable claim. (The CLI's bad inputs are in test/cli/cli.test.ts.)
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import type { Payload, PayloadCodec } from '@temporalio/common';
import {
  IdempotencyConfigError,
  IdempotencyInvalidKeyInput,
  IdempotencyOrphanedClaim,
  IdempotencyStoreUnavailable,
  PostgresClaimStore,
  SchemaTooNewError,
  idempotencyInterceptors,
  migrate,
} from '../src/index.js';
import type { ClaimStore, IdempotencyOptions } from '../src/index.js';
import { useTestSchema } from './support/schema.js';
import { uniqueName, useTemporal } from './support/temporal.js';
import { activityFailureOf } from './support/failures.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const pools: pg.Pool[] = [];
afterAll(() => Promise.all(pools.map((pool) => pool.end())));

let externalCalls = 0;
/** Stands for an external write: counts the calls that went out. */
const send = async (..._args: unknown[]) => (++externalCalls, 'sent');

async function run(options: Omit<IdempotencyOptions, 'store'> & { store?: ClaimStore }, args: unknown[], activity: (...args: unknown[]) => Promise<unknown> = send) {
  const taskQueue = uniqueName('tq');
  return temporal.withWorker(
    {
      taskQueue,
      activities: { send: activity },
      interceptors: { activity: idempotencyInterceptors({ store: schema.store, ...options }) },
    },
    () => temporal.client.workflow.execute('callActivity', { taskQueue, workflowId: uniqueName('wf'), args: [{ activity: 'send', args, maximumAttempts: 2 }] }),
  );
}

function poolFor(url: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, connectionTimeoutMillis: 2_000 });
  pool.on('error', () => undefined);
  pools.push(pool);
  return pool;
}

class Money {
  constructor(readonly cents: number) {}
}

const cyclic = (): unknown => {
  const node: Record<string, unknown> = { id: 1 };
  node['self'] = node;
  return node;
};

describe('key input that has no stable form: non-retryable IdempotencyInvalidKeyInput, nothing sent', () => {
  it.each<[string, (args: readonly unknown[]) => unknown, RegExp]>([
    ['NaN', ([to]) => [{ to, amount: NaN }], /args\[0\]\.amount.*not a finite number/],
    ['Infinity', () => [Infinity], /args\[0\].*not a finite number/],
    ['a BigInt', () => [{ cents: 10n }], /args\[0\]\.cents.*BigInt/],
    ['a function', () => [{ onDone: () => 1 }], /args\[0\]\.onDone.*function/],
    ['a symbol', () => [Symbol('x')], /args\[0\].*symbol/],
    ['a cycle', () => [cyclic()], /args\[0\]\.self.*cycle/],
    ['a Map', () => [new Map([['a', 1]])], /args\[0\].*Map/],
    ['a class instance', () => [new Money(5)], /args\[0\].*Money.*plain object/],
    ['an invalid Date', () => [new Date('not a date')], /args\[0\].*invalid Date/],
    ['a keyArgs that throws', () => { throw new TypeError('cannot read orderId'); }, /keyArgs\(\).*it threw TypeError(?!: cannot)/],
    ['undefined (a forgotten return)', () => undefined, /Refusing to run send: .*keyArgs\(\).*returned undefined/],
  ])('keyArgs giving %s', async (_, keyArgs, message) => {
    const before = externalCalls;
    const failure = await activityFailureOf(run({ activities: { send: { keyArgs } } }, ['+4912345']));
    expect(failure.type).toBe(IdempotencyInvalidKeyInput);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toMatch(message);
    expect(externalCalls).toBe(before);
  });

  it.each<[string, () => unknown, RegExp]>([
    ['an empty string', () => '', /key\(\).*returned an empty string, not a non-empty string/],
    ['a number', () => 42, /key\(\).*returned a value of type number/],
    ['an error', () => { throw new Error('no order id'); }, /key\(\).*threw Error(?!: no order id)/],
  ])('a custom key function returning %s', async (_, key, message) => {
    const before = externalCalls;
    const failure = await activityFailureOf(run({ activities: { send: { key: key as () => string } } }, ['x']));
    expect(failure.type).toBe(IdempotencyInvalidKeyInput);
    expect(failure.message).toMatch(message);
    expect(externalCalls).toBe(before);
  });
});

describe('a store that cannot take the claim: retryable IdempotencyStoreUnavailable, nothing sent', () => {
  it.each<[string, () => Promise<ClaimStore>, RegExp]>([
    ['a DATABASE_URL where nothing listens', async () => new PostgresClaimStore({ pool: poolFor('postgres://app:pw@127.0.0.1:1/app') }), /ECONNREFUSED|connect/],
    [
      'a wrong password',
      async () => {
        const url = new URL(inject('databaseUrl'));
        url.password = 'wrong';
        await schema.pool.query(`DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'idem_pw_test') THEN CREATE ROLE idem_pw_test LOGIN PASSWORD 'right'; END IF; END $$`);
        url.username = 'idem_pw_test';
        return new PostgresClaimStore({ pool: poolFor(url.toString()), schema: schema.name });
      },
      /authentication failed \[28P01\]/,
    ],
    ['a schema never migrated', async () => new PostgresClaimStore({ pool: schema.pool, schema: 'never_migrated' }), /Schema "never_migrated" is at migration 0 .*run migrate\(\)/],
  ])('%s', async (_, makeStore, message) => {
    const before = externalCalls;
    const failure = await activityFailureOf(run({ store: await makeStore() }, ['+4912345']));
    expect(failure.type).toBe(IdempotencyStoreUnavailable);
    expect(failure.nonRetryable).toBeFalsy();
    expect(failure.message).toMatch(/Nothing was called; Temporal will retry/);
    expect(failure.message).toMatch(message);
    // Database host and user names stay out of history: the worker's log has the whole error.
    expect(failure.message).not.toMatch(/idem_pw_test|127\.0\.0\.1/);
    expect(externalCalls).toBe(before);
  });

  it('a schema migrated by a newer release is named, with the fix', async () => {
    const newer = `t_newer_${randomUUID().slice(0, 8)}`;
    await migrate(schema.pool, { schema: newer });
    await schema.pool.query(`INSERT INTO "${newer}".migrations (id, name) VALUES (999, 'from the future')`);
    // …which this release's workers cannot keep up with.
    await schema.pool.query(`UPDATE "${newer}".settings SET oldest_worker_schema = 999`);
    try {
      await expect(migrate(schema.pool, { schema: newer })).rejects.toThrow(SchemaTooNewError);
      const failure = await activityFailureOf(run({ store: new PostgresClaimStore({ pool: schema.pool, schema: newer }) }, ['x']));
      expect(failure.message).toMatch(/migration 999, newer than this temporal-idempotency knows .*needs workers that know migration 999 or later.*Upgrade/);
    } finally {
      await schema.pool.query(`DROP SCHEMA "${newer}" CASCADE`);
    }
  });
});

describe('results and stores that fail after the call', () => {
  it('a result the payload converter cannot encode: the call went out once, and every attempt is refused with the reason', async () => {
    let calls = 0;
    const failure = await activityFailureOf(run({}, ['x'], async () => (calls++, { amount: 10n })));
    expect(failure.type).toBe(IdempotencyOrphanedClaim);
    expect(failure.message).toMatch(/the call succeeded but its result could not be encoded/);
    expect(calls).toBe(1);
  });

  it('a payload codec that does not map one to one: refused with the reason after one call', async () => {
    let calls = 0;
    const doubling: PayloadCodec = { encode: async (p: Payload[]) => [...p, ...p], decode: async (p: Payload[]) => p };
    const failure = await activityFailureOf(run({ payloadCodecs: [doubling] }, ['x'], async () => (calls++, 'ok')));
    expect(failure.message).toMatch(/codecs must map one to one/);
    expect(calls).toBe(1);
  });

  it('an unknown store failure while recording: the result still reaches the workflow, and a repeat refuses', async () => {
    let calls = 0;
    const failing: ClaimStore = Object.assign(Object.create(schema.store) as PostgresClaimStore, {
      complete: async () => {
        throw new Error('disk full');
      },
    });
    // A short lease: the repeat waits for the unrecorded claim's lease to lapse before it refuses.
    const options = { store: failing, recordRetryMs: 300, leaseMs: 2_000 };
    const workflowId = uniqueName('wf');
    const taskQueue = uniqueName('tq');
    const activities = { send: async () => (calls++, 'sent once') };
    const execute = () =>
      temporal.withWorker({ taskQueue, activities, interceptors: { activity: idempotencyInterceptors({ ...options }) } }, () =>
        temporal.client.workflow.execute('callActivity', { taskQueue, workflowId, args: [{ activity: 'send', args: [] }] }),
      );
    expect(await execute()).toEqual(['sent once']);
    const failure = await activityFailureOf(execute());
    expect(failure.type).toBe(IdempotencyOrphanedClaim);
    expect(calls).toBe(1);
  });

  it('very large arguments are keyed and replayed, not refused', async () => {
    let calls = 0;
    const big = { note: 'x'.repeat(1_000_000) };
    const workflowId = uniqueName('wf');
    const taskQueue = uniqueName('tq');
    const execute = () =>
      temporal.withWorker({ taskQueue, activities: { send: async () => ++calls }, interceptors: { activity: idempotencyInterceptors({ store: schema.store }) } }, () =>
        temporal.client.workflow.execute('callActivity', { taskQueue, workflowId, args: [{ activity: 'send', args: [big] }] }),
      );
    expect(await execute()).toEqual([1]);
    expect(await execute()).toEqual([1]);
    expect(calls).toBe(1);
  });
});

describe('options: IdempotencyConfigError naming the option, when the worker is configured', () => {
  const store = () => schema.store;
  it.each<[string, () => unknown, RegExp]>([
    ['no options at all', () => undefined, /options/],
    ['no store', () => ({}), /store: a ClaimStore is required/],
    ['a store that is not one', () => ({ store: { query: () => 1 } }), /store: a ClaimStore is required/],
    ['an unknown scope', () => ({ store: store(), scope: 'global' }), /scope: "global" is not a scope/],
    ['a lease too short to renew', () => ({ store: store(), leaseMs: 200 }), /leaseMs: 200 ms is too short/],
    ['a negative maxWaitMs', () => ({ store: store(), maxWaitMs: -5 }), /maxWaitMs: expected a duration/],
    ['a non-numeric recordRetryMs', () => ({ store: store(), recordRetryMs: '30s' }), /recordRetryMs: expected a duration/],
    ['an empty workerIdentity', () => ({ store: store(), workerIdentity: ' ' }), /workerIdentity: expected a non-empty string/],
    ['per-activity settings that are not an object', () => ({ store: store(), activities: { send: true } }), /activities\.send: expected an object/],
    ['a misspelled per-activity setting', () => ({ store: store(), activities: { send: { keyArg: () => [] } } }), /activities\.send\.keyArg: unknown setting/],
    ['a vendorDedup that is not a boolean', () => ({ store: store(), activities: { send: { vendorDedup: 'yes' } } }), /activities\.send\.vendorDedup: expected true or false/],
    ['an isAmbiguous that is not a function', () => ({ store: store(), activities: { send: { isAmbiguous: /timeout/ } } }), /isAmbiguous: expected a function/],
    ['audit: true on a store without a ledger', () => ({ store: { ...storeMethods(store()) }, audit: true }), /audit: this store keeps no ledger/],
    ['an audit that is not a ledger', () => ({ store: store(), audit: 'yes' }), /audit: expected true, false, or an AuditLedger/],
  ])('%s', (_, options, message) => {
    expect(() => idempotencyInterceptors(options() as IdempotencyOptions)).toThrow(IdempotencyConfigError);
    expect(() => idempotencyInterceptors(options() as IdempotencyOptions)).toThrow(message);
  });

  it('a PostgresClaimStore without a pool, or with a hostile schema name', () => {
    expect(() => new PostgresClaimStore({} as never)).toThrow(IdempotencyConfigError);
    expect(() => new PostgresClaimStore({} as never)).toThrow(/needs \{ pool \}/);
    expect(() => new PostgresClaimStore({ pool: schema.pool, schema: 'claims; DROP TABLE x' })).toThrow(/Invalid schema "claims; DROP TABLE x"/);
  });
});

/** A ClaimStore with none of the optional capabilities (no ledger): only the required methods, bound to a real store. */
function storeMethods(real: PostgresClaimStore): ClaimStore {
  return {
    keySalt: real.keySalt.bind(real),
    begin: real.begin.bind(real),
    complete: real.complete.bind(real),
    release: real.release.bind(real),
    markUnknown: real.markUnknown.bind(real),
    takeOver: real.takeOver.bind(real),
    renewLeases: real.renewLeases.bind(real),
    get: real.get.bind(real),
    handBack: real.handBack.bind(real),
    addWaiter: real.addWaiter.bind(real),
    waitersToTell: real.waitersToTell.bind(real),
    waitersTold: real.waitersTold.bind(real),
  };
}
