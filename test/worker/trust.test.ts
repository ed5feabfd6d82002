/**
 * Trust, as a payments company's security review would test it: the claims
 * table is the authority over whether a call happens, so with a record secret
 * a row written or changed without it is refused, never obeyed (one signed by a
 * secret the worker lacks waits, retryably, for a worker that has it); with a
 * codec, no user data is left in plain text in the tables, the history or the
 * logs; the ledger, the operator trail and the key salt are the database's to
 * keep, whatever a worker role was granted.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { DefaultLogger, Worker, bundleWorkflowCode } from '@temporalio/worker';
import { defaultPayloadConverter } from '@temporalio/common';
import type { ActivityFunction } from '@temporalio/common';
import {
  IdempotencyRecordRejected,
  IdempotencyRecordUnverifiable,
  OutcomeUnknownError,
  PostgresClaimStore,
  idempotencyInterceptors,
} from '../../src/index.js';
import type { IdempotencyOptions, PostgresClaimStoreOptions } from '../../src/index.js';
import { callKeysOf } from '../../src/key/index.js';
import { RecordSecret } from '../../src/store/record-signing.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { activityFailureOf } from '../support/failures.js';
import { XorCodec } from '../support/codecs.js';
import { claimRequest } from '../support/claims.js';
import { loggedLines } from '../support/logs.js';
import { runCli } from '../support/cli.js';
import { metricSample, scrapeMetrics } from '../support/metrics.js';
import { workflowInterceptorModules } from '../../dev/workflow-interceptors.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const SECRET = 'test-deployment-secret-of-at-least-32-bytes!';
const pools: pg.Pool[] = [];
afterAll(() => Promise.all(pools.map((pool) => pool.end())));

function storeWith(options: Omit<PostgresClaimStoreOptions, 'pool'> = {}): PostgresClaimStore {
  return new PostgresClaimStore({ pool: schema.pool, schema: schema.name, ...options });
}

async function run(
  activities: Record<string, ActivityFunction>,
  input: { activity: string; args: unknown[] },
  options: IdempotencyOptions,
  workflowId = uniqueName('wf'),
  taskQueue = uniqueName('tq'),
) {
  return temporal.withWorker({ taskQueue, activities, interceptors: { activity: idempotencyInterceptors(options) } }, () =>
    temporal.client.workflow.execute('callActivity', { taskQueue, workflowId, args: [input] }),
  );
}

/** The key a custom `key()` of `customKey` gets for activity `charge`, under this schema's key salt. */
async function keyedCustomKey(customKey: string): Promise<string> {
  return callKeysOf({ namespace: 'default', activityType: 'charge', customKey }, '[]', await schema.store.keySalt()).key;
}

const JSON_PLAIN = Buffer.from('json/plain').toString('base64');
const byOrder = { key: ({ args }: { args: readonly unknown[] }) => (args[0] as { order: string }).order };

/** A completed row with every column filled so the table's constraints accept it, as a writer without the secret makes one. */
async function plantCompleted(key: string, secretId: string): Promise<void> {
  await schema.pool.query(
    `INSERT INTO "${schema.name}".claims (key, state, token, fingerprint, namespace, activity_type, workflow_id, run_id, activity_id,
       attempt, claimed_by, result_payload, finished_at, lease_expires_at, deadline_at, record_mac, secret_id)
     VALUES ($1, 'completed', $2, $3, 'default', 'charge', 'wf-planted', 'run-planted', '1', 1, 'attacker', $4, now(), now(), now(), $5, $6)`,
    [
      key,
      randomUUID(),
      randomBytes(32).toString('hex'),
      { metadata: { encoding: JSON_PLAIN }, data: Buffer.from('{"id":"ch_FORGED"}').toString('base64') },
      randomBytes(32).toString('hex'),
      secretId,
    ],
  );
}

describe('records written without the secret are refused, never obeyed', () => {
  it('a forged completed row naming the workers\' secret: refused, non-retryably, and the vendor is not called', async () => {
    const order = uniqueName('order');
    const key = await keyedCustomKey(order);
    await plantCompleted(key, new RecordSecret(SECRET).id);
    let charges = 0;
    const taskQueue = uniqueName('tq');
    const failure = await activityFailureOf(
      run(
        { charge: async () => (charges++, { id: 'ch_real' }) },
        { activity: 'charge', args: [{ order, cents: 990_000 }] },
        { store: storeWith({ secret: SECRET }), activities: { charge: byOrder } },
        uniqueName('wf'),
        taskQueue,
      ),
    );
    expect(failure.type).toBe(IdempotencyRecordRejected);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toContain(key);
    expect(charges).toBe(0);
    // Counted for the alert the README sets on it: one refused attempt, of this type.
    const labels = [`taskQueue="${taskQueue}"`, 'activityType="charge"'];
    const text = await scrapeMetrics((body) => metricSample(body, 'idempotency_refusals', labels) !== undefined);
    expect(metricSample(text, 'idempotency_refusals', [...labels, `type="${IdempotencyRecordRejected}"`])).toBe(1);
    expect(metricSample(text, 'idempotency_claims', labels)).toBeUndefined();
  });

  it('a forged completed row naming a secret the workers lack: refused, retryably, and never answered from', async () => {
    const order = uniqueName('order');
    await plantCompleted(await keyedCustomKey(order), 'feedc0de');
    let charges = 0;
    const failure = await activityFailureOf(
      run(
        { charge: async () => (charges++, { id: 'ch_real' }) },
        { activity: 'charge', args: [{ order }], maximumAttempts: 2 } as never,
        { store: storeWith({ secret: SECRET }), activities: { charge: byOrder } },
      ),
    );
    expect(failure.type).toBe(IdempotencyRecordUnverifiable);
    expect(failure.nonRetryable).toBe(false);
    expect(failure.message).toMatch(/signed by record secret feedc0de, which this worker does not hold/);
    expect(failure.message).not.toContain('ch_FORGED');
    expect(charges).toBe(0);
  });

  it('a row turned into a forged completed row while an attempt waits on it: the waiting attempt refuses it, never answers from it', async () => {
    const order = uniqueName('order');
    const key = await keyedCustomKey(order);
    const workflowId = uniqueName('wf');
    // Another worker holds the claim and is still calling.
    const owner = storeWith({ secret: SECRET });
    const salt = await owner.keySalt();
    const owned = await owner.begin(
      claimRequest({ key, fingerprint: salt.hash('fingerprint', [JSON.stringify([{ order }])]), activityType: 'charge', workflowId, deadlineMs: 90_000 }),
      90_000,
    );
    expect(owned.won).toBe(true);
    let charges = 0;
    const taskQueue = uniqueName('tq');
    const waiterStore = storeWith({ secret: SECRET });
    let reads = 0;
    const read = waiterStore.get.bind(waiterStore);
    waiterStore.get = (claimKey) => (reads++, read(claimKey));
    const interceptors = { activity: idempotencyInterceptors({ store: waiterStore, activities: { charge: byOrder }, maxWaitMs: 60_000 }) };
    const outcome = await temporal.withWorker({ taskQueue, activities: { charge: async () => (charges++, { id: 'ch_real' }) }, interceptors }, async () => {
      const handle = await temporal.client.workflow.start('callActivity', {
        taskQueue,
        workflowId,
        args: [{ activity: 'charge', args: [{ order }], startToCloseTimeoutMs: 60_000, maximumAttempts: 1 }],
      });
      // This worker's attempt finds the live owner and waits for its outcome, reading the claim again and again.
      for (let i = 0; reads === 0; i++) {
        if (i > 200) throw new Error('the attempt never waited on the owner');
        await sleep(100);
      }
      // A writer of the claims table without the secret: "completed", a receipt of its choosing, signed by a made-up secret.
      await schema.pool.query(
        `UPDATE "${schema.name}".claims SET state = 'completed', result_payload = $2, finished_at = now(),
           record_mac = repeat('ab', 32), secret_id = 'deadbeef' WHERE key = $1`,
        [key, { metadata: { encoding: JSON_PLAIN }, data: Buffer.from('{"id":"ch_FORGED"}').toString('base64') }],
      );
      return activityFailureOf(handle.result());
    });
    expect({ charges, type: outcome.type }).toEqual({ charges: 0, type: IdempotencyRecordUnverifiable });
    expect(outcome.message).not.toContain('ch_FORGED');
  });

  it('a genuine encrypted result copied onto another key: refused', async () => {
    const codec = new XorCodec();
    const store = storeWith({ secret: SECRET });
    const options: IdempotencyOptions = { store, payloadCodecs: [codec], activities: { charge: byOrder } };
    let charges = 0;
    const charge = async (request: { order: string; cents: number }) => (charges++, { receipt: `${request.cents}` });
    const small = uniqueName('small');
    await run({ charge }, { activity: 'charge', args: [{ order: small, cents: 100 }] }, options);
    const big = uniqueName('big');
    // The attacker copies the small charge's signed, encrypted row onto the big charge's key.
    await schema.pool.query(
      `INSERT INTO "${schema.name}".claims (key, state, token, fingerprint, namespace, activity_type, activity_id, attempt, claimed_by, result_payload, record_mac, finished_at, secret_id)
       SELECT $2, state, token, fingerprint, namespace, activity_type, activity_id, attempt, claimed_by, result_payload, record_mac, finished_at, secret_id
       FROM "${schema.name}".claims WHERE key = $1`,
      [await keyedCustomKey(small), await keyedCustomKey(big)],
    );
    const failure = await activityFailureOf(run({ charge }, { activity: 'charge', args: [{ order: big, cents: 990_000 }] }, options));
    expect(failure.type).toBe(IdempotencyRecordRejected);
    expect(charges).toBe(1);
  });

  it('a result edited in place: refused', async () => {
    const options: IdempotencyOptions = { store: storeWith({ secret: SECRET }), activities: { charge: byOrder } };
    let charges = 0;
    const charge = async () => (charges++, { id: 'ch_1', amount: 100 });
    const order = uniqueName('order');
    await run({ charge }, { activity: 'charge', args: [{ order }] }, options);
    await schema.pool.query(`UPDATE "${schema.name}".claims SET result_payload = $2 WHERE key = $1`, [
      await keyedCustomKey(order),
      { metadata: { encoding: JSON_PLAIN }, data: Buffer.from('{"id":"ch_1","amount":1}').toString('base64') },
    ]);
    const failure = await activityFailureOf(run({ charge }, { activity: 'charge', args: [{ order }] }, options));
    expect(failure.type).toBe(IdempotencyRecordRejected);
    expect(charges).toBe(1);
  });

  it('a signed row whose MAC was removed, then edited: refused (as unsigned, retryably), never obeyed', async () => {
    const options: IdempotencyOptions = { store: storeWith({ secret: SECRET }), activities: { charge: byOrder } };
    let charges = 0;
    const charge = async () => (charges++, { id: 'ch_1', amount: 100 });
    const order = uniqueName('order');
    await run({ charge }, { activity: 'charge', args: [{ order }] }, options);
    await schema.pool.query(`UPDATE "${schema.name}".claims SET record_mac = NULL, secret_id = NULL, result_payload = $2 WHERE key = $1`, [
      await keyedCustomKey(order),
      { metadata: { encoding: JSON_PLAIN }, data: Buffer.from('{"id":"ch_1","amount":1}').toString('base64') },
    ]);
    const failure = await activityFailureOf(run({ charge }, { activity: 'charge', args: [{ order }], maximumAttempts: 2 } as never, options));
    expect(failure.type).toBe(IdempotencyRecordUnverifiable);
    expect(failure.message).toMatch(/is unsigned, and this worker requires signed records/);
    expect(charges).toBe(1);
  });

  it("a refusal never carries words a writer put in the row's note: the note is signed too", async () => {
    const options: IdempotencyOptions = { store: storeWith({ secret: SECRET }), activities: { charge: byOrder } };
    const order = uniqueName('order');
    const charge = async () => Promise.reject(new OutcomeUnknownError('the line dropped'));
    await activityFailureOf(run({ charge }, { activity: 'charge', args: [{ order }], maximumAttempts: 1 } as never, options));
    await schema.pool.query(`UPDATE "${schema.name}".claims SET outcome_note = 'NotSentError: nothing reached the vendor' WHERE key = $1`, [
      await keyedCustomKey(order),
    ]);
    const failure = await activityFailureOf(run({ charge }, { activity: 'charge', args: [{ order }] }, options));
    expect(failure.type).toBe(IdempotencyRecordRejected);
    expect(failure.message).not.toContain('nothing reached the vendor');
  });

  it('a record signed by the workers is answered from, and the operator\'s resolution only with the secret', async () => {
    const options: IdempotencyOptions = { store: storeWith({ secret: SECRET }), activities: { charge: byOrder } };
    const order = uniqueName('order');
    let attempts = 0;
    const charge = async () => {
      if (++attempts === 1) throw new OutcomeUnknownError('the line dropped');
      return { id: 'ch_unreachable' };
    };
    await activityFailureOf(run({ charge }, { activity: 'charge', args: [{ order }] }, options));
    const key = await keyedCustomKey(order);
    const cli = (env: Record<string, string>, ...args: string[]) => runCli([...args, '--schema', schema.name, '--no-signal'], env);
    const unsigned = await cli({}, 'resolve', key, '--result', '{"id":"ch_by_hand","amount":100}');
    expect(unsigned.code).toBe(2);
    expect(unsigned.stderr).toMatch(/record is signed \(secret [0-9a-f]{8}\).*Give the CLI their secret.*Nothing was changed/);
    const signed = await cli({ TEMPORAL_IDEMPOTENCY_SECRET: SECRET }, 'resolve', key, '--result', '{"id":"ch_by_hand","amount":100}', '--reason', 'vendor dashboard shows ch_by_hand');
    expect(signed.code).toBe(0);
    expect(await run({ charge }, { activity: 'charge', args: [{ order }] }, options)).toEqual([{ id: 'ch_by_hand', amount: 100 }]);
    expect(attempts).toBe(1);
    const shown = JSON.parse((await cli({}, 'show', key, '--json')).stdout) as { record: string; operator_actions: Array<Record<string, unknown>> };
    expect(shown.operator_actions).toEqual([
      expect.objectContaining({ action: 'resolve', reason: 'vendor dashboard shows ch_by_hand', forced: false, databaseUser: expect.any(String) }),
    ]);
  });
});

describe('records the workers write after a takeover authenticate', () => {
  it('a result a reconcile found, and a call run after it, are answered from: their records are signed as written', async () => {
    for (const answer of ['happened', 'not-happened'] as const) {
      let calls = 0;
      const charge = async () => {
        if (++calls === 1) throw new OutcomeUnknownError('the line dropped after sending');
        return { id: `ch_run_${calls}` };
      };
      const reconcile = async () =>
        answer === 'happened' ? ({ outcome: 'happened', result: { id: 'ch_found' } } as const) : ({ outcome: 'not-happened' } as const);
      const options: IdempotencyOptions = {
        store: storeWith({ secret: SECRET }),
        activities: { charge: { ...byOrder, reconcile } },
      };
      const order = uniqueName('order');
      // Attempt 1 leaves the claim unknown; attempt 2 takes it over, asks, and records (or runs, then records).
      const first = await run({ charge }, { activity: 'charge', args: [{ order }] }, { ...options }).catch(() => undefined);
      const expected = answer === 'happened' ? { id: 'ch_found' } : { id: 'ch_run_2' };
      expect(first).toEqual([expected]);
      // A later call of the same action reads that record: signed as the row holds it, so answered, not rejected.
      expect(await run({ charge }, { activity: 'charge', args: [{ order }] }, options)).toEqual([expected]);
      expect(calls).toBe(answer === 'happened' ? 1 : 2);
    }
  });

  it('a claim given back to its call after the vendor could not tell (and while it was asked) authenticates', async () => {
    let calls = 0;
    const charge = async () => {
      calls++;
      throw new OutcomeUnknownError('the line dropped after sending');
    };
    const reconcile = async () => ({ outcome: 'unknown', reason: 'the lookup cannot find requests by key' }) as const;
    const store = storeWith({ secret: SECRET });
    const options: IdempotencyOptions = { store, activities: { charge: { ...byOrder, reconcile } } };
    const order = uniqueName('order');
    const failure = await activityFailureOf(run({ charge }, { activity: 'charge', args: [{ order }] }, options));
    expect(failure.type).toBe('IdempotencyOrphanedClaim');
    expect(await store.get(await keyedCustomKey(order))).toMatchObject({ state: 'unknown', attempt: 1, authenticity: 'verified' });
    expect(calls).toBe(1);
  });
});

describe('no user data in plain text, with a codec', () => {
  it('keeps an api key from an error message out of the claims, the ledger, the history and the logs', async () => {
    const leaked = `sk_live_${randomUUID().replace(/-/g, '')}`;
    const codec = new XorCodec();
    const taskQueue = uniqueName('tq');
    const workflowId = uniqueName('wf');
    const logsBefore = loggedLines().length;
    const activities = {
      charge: async () => {
        throw new OutcomeUnknownError(`timeout calling https://api.vendor.example/v1/charges?api_key=${leaked}`);
      },
    };
    const failureConverterPath = fileURLToPath(new URL('../support/encoding-failure-converter.ts', import.meta.url));
    const bundle = await bundleWorkflowCode({
      workflowsPath: fileURLToPath(new URL('../support/workflows.ts', import.meta.url)),
      workflowInterceptorModules,
      failureConverterPath,
      logger: new DefaultLogger('WARN'),
    });
    const worker = await Worker.create({
      connection: temporal.nativeConnection,
      taskQueue,
      workflowBundle: bundle,
      activities,
      dataConverter: { payloadCodecs: [codec], failureConverterPath },
      interceptors: { activity: idempotencyInterceptors({ store: storeWith({ secret: SECRET }), payloadCodecs: [codec], audit: true }) },
    });
    await worker
      .runUntil(temporal.client.workflow.execute('callActivity', { taskQueue, workflowId, args: [{ activity: 'charge', args: [], maximumAttempts: 2 }] }))
      .catch(() => undefined);
    const claims = await schema.pool.query(`SELECT row_to_json(c)::text AS row FROM "${schema.name}".claims c WHERE workflow_id = $1`, [workflowId]);
    const ledger = await schema.pool.query(`SELECT row_to_json(l)::text AS row FROM "${schema.name}".ledger l WHERE workflow_id = $1`, [workflowId]);
    expect(claims.rows).toHaveLength(1);
    expect(ledger.rows).toHaveLength(2);
    const history = JSON.stringify(await temporal.client.workflow.getHandle(workflowId).fetchHistory());
    expect(history).toContain('IdempotencyOrphanedClaim');
    // Errors in log metadata are written out whole (message, stack, cause), as a log shipper would.
    const logs = JSON.stringify(loggedLines().slice(logsBefore), (_, value: unknown) =>
      typeof value === 'bigint' ? String(value) : value instanceof Error ? { ...value, message: value.message, stack: value.stack, cause: value.cause } : value,
    );
    for (const [where, text] of Object.entries({ claims: JSON.stringify(claims.rows), ledger: JSON.stringify(ledger.rows), history, logs })) {
      expect(text.includes(leaked), `${where} holds the api key in plain text`).toBe(false);
      expect(Buffer.from(text).toString('base64').includes(Buffer.from(leaked).toString('base64')), `${where} holds it in base64`).toBe(false);
    }
  });
});

describe('an append-only ledger and operator trail, and a fixed key salt, enforced', () => {
  it('refuses UPDATE and DELETE to a worker role granted them, and lets the owner prune', async () => {
    const role = `ti_worker_${randomUUID().slice(0, 8)}`;
    await schema.pool.query(`CREATE ROLE ${role} LOGIN PASSWORD 'worker'`);
    await schema.pool.query(`GRANT USAGE ON SCHEMA "${schema.name}" TO ${role}`);
    // Granted more than it needs on purpose: the trigger must hold anyway.
    await schema.pool.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "${schema.name}" TO ${role}`);
    await schema.pool.query(`GRANT USAGE ON ALL SEQUENCES IN SCHEMA "${schema.name}" TO ${role}`);
    const url = new URL(inject('databaseUrl'));
    url.username = role;
    url.password = 'worker';
    const worker = new pg.Pool({ connectionString: url.toString(), max: 1 });
    pools.push(worker);
    const callId = randomUUID();
    const call = { callId, key: 'k', activityType: 'charge', workflowId: 'wf', runId: 'r', activityId: '1', attempt: 1, worker: 'w/1' };
    await new PostgresClaimStore({ pool: worker, schema: schema.name }).auditLedger().recordStart(call);
    // A row in each, so a row trigger has something to refuse.
    await schema.pool.query(`INSERT INTO "${schema.name}".operator_actions (action) VALUES ('test')`);
    for (const table of ['ledger', 'operator_actions']) {
      await expect(worker.query(`UPDATE "${schema.name}".${table} SET key = 'other'`)).rejects.toThrow(/changed only by its owner/);
      await expect(worker.query(`DELETE FROM "${schema.name}".${table}`)).rejects.toThrow(/changed only by its owner/);
      await expect(worker.query(`TRUNCATE "${schema.name}".${table}`)).rejects.toThrow(/changed only by its owner|permission denied/);
    }
    // A new salt would give every call a new key: the settings refuse it, whatever was granted.
    await expect(worker.query(`UPDATE "${schema.name}".settings SET key_salt = '\\x00000000000000000000000000000000'`)).rejects.toThrow(/changed only by its owner/);
    await expect(worker.query(`DELETE FROM "${schema.name}".settings`)).rejects.toThrow(/changed only by its owner/);
    const { rowCount } = await schema.pool.query(`DELETE FROM "${schema.name}".ledger WHERE call_id = $1`, [callId]);
    expect(rowCount).toBe(1);
    await sleep(0);
  });
});

void defaultPayloadConverter;
