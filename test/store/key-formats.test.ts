/**
 * Moving a deployment to a secret, and from one secret to the next: the store
 * decides which key format is in force, `keys activate` moves it, claims made
 * before the move are found under their earlier keys, and no claim in an
 * earlier format can appear after it. Each scenario in its own schema.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import type { ActivityFunction } from '@temporalio/common';
import {
  ClaimOperations,
  IdempotencyRecordRejected,
  IdempotencyStoreUnavailable,
  KeyFormatChangedError,
  OutcomeUnknownError,
  PostgresClaimStore,
  idempotencyInterceptors,
  idempotencyKey,
  migrate,
} from '../../src/index.js';
import type { IdempotencyOptions, PostgresClaimStoreOptions } from '../../src/index.js';
import { DeploymentSecret, UNKEYED, deriveCustomKey, keyedFormat } from '../../src/key/index.js';
import type { KeyFormat } from '../../src/key/index.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { applicationFailureIn } from '../../dev/failures.js';
import { claimRequest } from '../support/claims.js';

const temporal = useTemporal();
const SECRET = 'test-deployment-secret-of-at-least-32-bytes!';
const NEW_SECRET = 'the-rotated-deployment-secret-of-at-least-32-bytes';
const pool = new pg.Pool({ connectionString: inject('databaseUrl'), max: 10 });
pool.on('error', () => undefined);
const schemas: string[] = [];
afterAll(async () => {
  for (const schema of schemas) await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
});

/** A fresh schema: each scenario moves its key format on its own. */
async function freshSchema(): Promise<string> {
  const schema = `t_key_formats_${randomUUID().slice(0, 8)}`;
  schemas.push(schema);
  await migrate(pool, { schema });
  return schema;
}

const byOrder = { key: ({ args }: { args: readonly unknown[] }) => (args[0] as { order: string }).order };
const keyIn = (order: string, format: KeyFormat) => deriveCustomKey({ namespace: 'default', activityType: 'charge', customKey: order }, format);
const keyed = (secret: string) => keyedFormat(new DeploymentSecret(secret));

async function run(
  activities: Record<string, ActivityFunction>,
  order: string,
  options: IdempotencyOptions,
  maximumAttempts = 2,
): Promise<{ returned: unknown } | { failed: string | undefined; message: string }> {
  const taskQueue = uniqueName('tq');
  return temporal
    .withWorker({ taskQueue, activities, interceptors: { activity: idempotencyInterceptors(options) } }, () =>
      temporal.client.workflow.execute('callActivity', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'charge', args: [{ order }], maximumAttempts }],
      }),
    )
    .then(
      (returned) => ({ returned }),
      (error: unknown) => {
        const failure = applicationFailureIn(error);
        if (!failure) throw error;
        return { failed: failure.type ?? undefined, message: failure.message };
      },
    );
}

function storeIn(schema: string, options: Omit<PostgresClaimStoreOptions, 'pool'> = {}) {
  return new PostgresClaimStore({ pool, schema, ...options });
}

function activate(schema: string, secret: string, previousSecrets: PostgresClaimStoreOptions['previousSecrets'] = []) {
  // force: the scenarios here start with workers without the secret, stopped before the activation.
  return new ClaimOperations(pool, { schema, secret, previousSecrets }).activateSecret({ reason: 'test', force: true });
}

describe('moving to a secret', () => {
  it('finds a claim made before the secret was put in force, under its earlier key; the charge went out once', async () => {
    const schema = await freshSchema();
    let charges = 0;
    const charge = async () => (charges++, { id: `ch_${charges}` });
    const order = uniqueName('order');
    await run({ charge }, order, { store: storeIn(schema), activities: { charge: byOrder } });
    const report = await activate(schema, SECRET);
    expect(report.signed).toBeGreaterThanOrEqual(1);
    const again = await run({ charge }, order, { store: storeIn(schema, { secret: SECRET, previousSecrets: ['unkeyed'] }), activities: { charge: byOrder } });
    expect(again).toEqual({ returned: [{ id: 'ch_1' }] });
    expect(charges).toBe(1);
  });

  it('keys and signs in the format in force: a worker given the secret keys with sha256 until the secret is activated', async () => {
    const schema = await freshSchema();
    const order = uniqueName('order');
    const store = storeIn(schema, { secret: SECRET });
    const charge = async () => ({ id: 'ch' });
    await run({ charge }, order, { store, activities: { charge: byOrder } });
    const before = await pool.query(`SELECT key, key_format, record_mac IS NOT NULL AS signed FROM "${schema}".claims`);
    expect(before.rows).toEqual([{ key: keyIn(order, UNKEYED), key_format: 1, signed: true }]);
    await activate(schema, SECRET);
    const next = uniqueName('order');
    await run({ charge }, next, { store, activities: { charge: byOrder } }); // the same worker: it learns the new format
    const after = await pool.query(`SELECT key_format FROM "${schema}".claims WHERE key = $1`, [keyIn(next, keyed(SECRET))]);
    expect(after.rows).toEqual([{ key_format: 2 }]);
  });

  it('warns, once, that a worker given a secret obeys unsigned records until the secret is activated; not after', async () => {
    const schema = await freshSchema();
    const warnings: string[] = [];
    const logger = { warn: (message: string) => warnings.push(message), error: () => undefined };
    const before = storeIn(schema, { secret: SECRET, logger });
    await before.begin(claimRequest(), 60_000);
    await before.begin(claimRequest(), 60_000);
    const unprotected = warnings.filter((message) => /no secret is in force.*keys activate/s.test(message));
    expect(unprotected).toHaveLength(1);
    expect(unprotected[0]).toMatch(/unsigned/);
    await activate(schema, SECRET);
    warnings.length = 0;
    await storeIn(schema, { secret: SECRET, logger }).keyFormats();
    expect(warnings.filter((message) => /no secret is in force/.test(message))).toEqual([]);
  });

  it('once a secret is in force, a worker without it cannot claim (retryably, nothing called), and no format-1 claim can be made', async () => {
    const schema = await freshSchema();
    await activate(schema, SECRET);
    let charges = 0;
    const outcome = await run({ charge: async () => ++charges }, uniqueName('order'), { store: storeIn(schema), activities: { charge: byOrder } });
    expect(outcome).toMatchObject({ failed: IdempotencyStoreUnavailable, message: expect.stringMatching(/keys its claims with the secret .* which this worker was not given/) });
    expect(charges).toBe(0);
    // Even a store that still believes format 1 is in force cannot make such a claim: the database refuses it.
    await expect(storeIn(schema, { secret: SECRET }).begin(claimRequest({ keyFormat: { version: 1, secretId: null } }), 60_000)).rejects.toThrow(
      KeyFormatChangedError,
    );
  });

  it('vendorDedup: an orphan from before the move is re-run with the key its first call carried', async () => {
    const schema = await freshSchema();
    const order = uniqueName('order');
    const vendorKeys: string[] = [];
    let calls = 0;
    const charge = async () => {
      vendorKeys.push(idempotencyKey());
      if (++calls === 1) throw new OutcomeUnknownError('the line dropped');
      return { id: 'ch_1' };
    };
    const settings = { charge: { ...byOrder, vendorDedup: true } };
    // Before the move: the call goes out, its outcome unknown; no retry is left (the orphan stays).
    const first = await run({ charge }, order, { store: storeIn(schema), activities: settings }, 1);
    expect(first).toMatchObject({ failed: 'OutcomeUnknownError' });
    // After it, a worker keyed with the secret meets the orphan under its old key, takes it over, and calls
    // with the key the first call carried, which the vendor dedups on.
    await activate(schema, SECRET);
    const again = await run({ charge }, order, { store: storeIn(schema, { secret: SECRET, previousSecrets: ['unkeyed'] }), activities: settings });
    expect(again).toEqual({ returned: [{ id: 'ch_1' }] });
    expect(vendorKeys).toEqual([keyIn(order, UNKEYED), keyIn(order, UNKEYED)]);
  });

  it('a forged unsigned row under a guessable format-1 key is refused after the move', async () => {
    const schema = await freshSchema();
    await activate(schema, SECRET);
    const order = uniqueName('order');
    // The attacker reads the format in force and inserts a row the trigger lets through, unsigned.
    await pool.query(
      `INSERT INTO "${schema}".claims (key, state, token, fingerprint, namespace, activity_type, activity_id, attempt, claimed_by, result_payload, finished_at, key_format, secret_id, worker_schema)
       VALUES ($1, 'completed', $2, $3, 'default', 'charge', '1', 1, 'attacker', $4, now(), 2, $5, 8)`,
      [
        keyIn(order, UNKEYED),
        randomUUID(),
        UNKEYED.fingerprint(JSON.stringify([{ order }])),
        { metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: Buffer.from('{"id":"ch_FORGED"}').toString('base64') },
        new DeploymentSecret(SECRET).id,
      ],
    );
    let charges = 0;
    const outcome = await run({ charge: async () => ++charges }, order, {
      store: storeIn(schema, { secret: SECRET, previousSecrets: ['unkeyed'] }),
      activities: { charge: byOrder },
    });
    expect(outcome).toMatchObject({ failed: IdempotencyRecordRejected });
    expect(charges).toBe(0);
  });

  it('leaves a row whose MAC fails unsigned at activation, and reports it', async () => {
    const schema = await freshSchema();
    const store = storeIn(schema, { secret: SECRET });
    const { claim } = await store.begin(claimRequest(), 60_000);
    await pool.query(`UPDATE "${schema}".claims SET claimed_by = 'someone else' WHERE key = $1`, [claim.key]);
    const report = await activate(schema, SECRET);
    expect(report.rejected).toEqual([claim.key]);
  });
});

describe('keys activate refuses a secret the workers do not hold', () => {
  it('while a worker seen lately lacks it, or rows are signed by secrets the CLI was not given; --force overrides', async () => {
    const schema = await freshSchema();
    let charges = 0;
    const charge = async () => (charges++, { id: `ch_${charges}` });
    await run({ charge }, uniqueName('order'), { store: storeIn(schema, { secret: SECRET }), activities: { charge: byOrder } });
    const wrong = new ClaimOperations(pool, { schema, secret: NEW_SECRET });
    await expect(wrong.activateSecret()).rejects.toMatchObject({ reason: 'workers-lack-secret' });
    // The worker is long gone; its rows still say which secret the workers held.
    await pool.query(`UPDATE "${schema}".workers SET seen_at = now() - interval '1 hour'`);
    await expect(wrong.activateSecret()).rejects.toMatchObject({ reason: 'unknown-signers' });
    expect(await wrong.keyFormatInForce()).toMatchObject({ version: 1 });
    expect(await wrong.activateSecret({ force: true })).toMatchObject({ inForce: { version: 2 }, rejected: [expect.any(String)] });
    // Forced past both refusals: the operator trail says so.
    const { rows } = await pool.query(`SELECT forced FROM "${schema}".operator_actions WHERE action = 'activate-secret'`);
    expect(rows).toEqual([{ forced: true }]);
  });
});

describe('rotating the secret', () => {
  it('in two steps: workers with the new secret sign with the one in force, so a worker not yet given it still reads their records', async () => {
    const schema = await freshSchema();
    await activate(schema, SECRET);
    let charges = 0;
    const charge = async () => (charges++, { id: `ch_${charges}` });
    const order = uniqueName('order');
    // Step 1: the new secret rolls out; the old one is still in force.
    const rolledOut = { store: storeIn(schema, { secret: NEW_SECRET, previousSecrets: [SECRET] }), activities: { charge: byOrder } };
    await run({ charge }, order, rolledOut);
    const notYet = await run({ charge }, order, { store: storeIn(schema, { secret: SECRET }), activities: { charge: byOrder } });
    expect(notYet).toEqual({ returned: [{ id: 'ch_1' }] });
    // Step 2: every worker has it; the operator activates it. Claims keyed with the old secret are still found.
    // force: the worker not yet given the new secret (same identity as the others here) has been stopped.
    await new ClaimOperations(pool, { schema, secret: NEW_SECRET, previousSecrets: [SECRET] }).activateSecret({ force: true });
    expect(await run({ charge }, order, rolledOut)).toEqual({ returned: [{ id: 'ch_1' }] });
    expect(charges).toBe(1);
    const { rows } = await pool.query(`SELECT secret_id FROM "${schema}".claims`);
    expect(rows).toEqual([{ secret_id: new DeploymentSecret(NEW_SECRET).id }]);
  });

  it('retiring the old secret: its late genuine rows are signed again and still answer; anything it signs after is refused', async () => {
    const schema = await freshSchema();
    await activate(schema, SECRET);
    const oldId = new DeploymentSecret(SECRET).id;
    let charges = 0;
    const charge = async () => (charges++, { id: `ch_${charges}` });
    const rolledOut = { store: storeIn(schema, { secret: NEW_SECRET, previousSecrets: [SECRET] }), activities: { charge: byOrder } };
    const operations = new ClaimOperations(pool, { schema, secret: NEW_SECRET, previousSecrets: [SECRET] });
    await operations.activateSecret();
    // An attempt that began before the activation records its outcome signed with the old secret.
    const late = uniqueName('order');
    await run({ charge }, late, { store: storeIn(schema, { secret: SECRET }), activities: { charge: byOrder } }).catch(() => undefined);
    await pool.query(`UPDATE "${schema}".settings SET key_format = 2, secret_id = $1`, [oldId]); // as it was when that attempt began
    await run({ charge }, late, { store: storeIn(schema, { secret: SECRET }), activities: { charge: byOrder } });
    await pool.query(`UPDATE "${schema}".settings SET secret_id = $1`, [new DeploymentSecret(NEW_SECRET).id]);
    const signedByOld = (await pool.query(`SELECT secret_id, record_mac FROM "${schema}".claims`)).rows;
    expect(signedByOld).toEqual([{ secret_id: oldId, record_mac: expect.any(String) }]);

    await expect(operations.retireSecret(new DeploymentSecret(NEW_SECRET).id)).rejects.toMatchObject({ reason: 'in-force' });
    expect(await operations.retireSecret(oldId, { reason: 'rotation' })).toEqual({ retired: oldId, resigned: 1, rejected: [] });
    expect(await run({ charge }, late, rolledOut)).toEqual({ returned: [{ id: 'ch_1' }] });
    expect(charges).toBe(1);

    // Whoever still holds the old secret: a row it signs decides nothing (here, its genuine MAC put back).
    await pool.query(`UPDATE "${schema}".claims SET secret_id = $1, record_mac = $2`, [oldId, signedByOld[0].record_mac]);
    expect(await run({ charge }, late, rolledOut)).toMatchObject({ failed: IdempotencyRecordRejected });
    await expect(new ClaimOperations(pool, { schema, secret: SECRET }).activateSecret()).rejects.toMatchObject({ reason: 'retired' });
  });
});
