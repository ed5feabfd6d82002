/**
 * The key salt: made by the first `migrate`, kept in the schema, never changed. A call's key
 * depends on the schema and the call alone: no record secret, rotation or worker setting can
 * give it another key, so no claim is ever found under one key and made again under another.
 * And no unsalted hash of a call's arguments leaves the worker: keys, fingerprints and every
 * statement parameter are keyed, so whoever logs statements learns nothing a guess could confirm.
 */
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { PostgresClaimStore, migrate } from '../../src/index.js';
import type { PostgresClaimStoreOptions } from '../../src/index.js';
import { canonicalize } from '../../src/key/index.js';
import { IdempotentActivityEnvironment } from '../../src/testing/index.js';
import { useTestSchema } from '../support/schema.js';

const schema = useTestSchema(import.meta.filename);
const OLD = 'key-salt-test-old-secret-of-at-least-32-bytes!';
const NEW = 'key-salt-test-new-secret-of-at-least-32-bytes!';
const extraSchemas: string[] = [];
afterAll(async () => {
  for (const name of extraSchemas) await schema.pool.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
});

function store(options: Omit<PostgresClaimStoreOptions, 'pool'> = {}, pool: pg.Pool = schema.pool): PostgresClaimStore {
  return new PostgresClaimStore({ pool, schema: schema.name, ...options });
}

/** A worker of this schema: the interceptor on `store`, attempts of workflow `workflowId` in namespace `default`. */
function worker(on: PostgresClaimStore, workflowId: string) {
  return new IdempotentActivityEnvironment({ store: on, info: { namespace: 'default', workflowExecution: { workflowId, runId: 'run-1' } } });
}

async function saltOf(name: string): Promise<Buffer> {
  const { rows } = await schema.pool.query<{ key_salt: Buffer }>(`SELECT key_salt FROM "${name}".settings`);
  return rows[0]!.key_salt;
}

describe('the key salt', () => {
  it('is made by the first migrate, 32 random bytes, one per schema, and kept by every later one', async () => {
    const other = `t_key_salt_other_${randomBytes(3).toString('hex')}`;
    extraSchemas.push(other);
    await migrate(schema.pool, { schema: other });
    const ours = await saltOf(schema.name);
    expect(ours).toHaveLength(32);
    expect((await saltOf(other)).equals(ours)).toBe(false);
    await migrate(schema.pool, { schema: schema.name });
    expect((await saltOf(schema.name)).equals(ours)).toBe(true);
    expect((await store().keySalt()).hex).toBe(ours.toString('hex'));
  });

  it("gives a call the same key whatever the workers' record secrets, before, during and after a rotation", async () => {
    const workflowId = `wf-${randomBytes(4).toString('hex')}`;
    let charges = 0;
    const chargeCard = async (_order: { orderId: string; cents: number }) => `charged (${++charges})`;
    /** Every key a worker asked its store to claim (or find). */
    const keys: string[] = [];
    const observed = (options: Omit<PostgresClaimStoreOptions, 'pool'>) => {
      const made = store(options);
      const begin = made.begin.bind(made);
      made.begin = (request, leaseMs) => (keys.push(request.key), begin(request, leaseMs));
      return made;
    };
    const order = { orderId: 'o-1', cents: 4200 };
    const configurations: Array<Omit<PostgresClaimStoreOptions, 'pool'>> = [
      {},
      { previousSecrets: ['unsigned', OLD] },
      { secret: OLD, previousSecrets: ['unsigned'] },
      { secret: OLD, previousSecrets: ['unsigned', NEW] },
      { secret: NEW, previousSecrets: [OLD, 'unsigned'] },
    ];
    for (const options of configurations) await expect(worker(observed(options), workflowId).run(chargeCard, order)).resolves.toBe('charged (1)');
    expect(charges).toBe(1);
    expect(keys).toHaveLength(configurations.length);
    expect(new Set(keys).size).toBe(1);
    const { rows } = await schema.pool.query<{ key: string }>(`SELECT key FROM "${schema.name}".claims WHERE workflow_id = $1`, [workflowId]);
    expect(rows.map((row) => row.key)).toEqual([keys[0]]);
  });
});

describe('what leaves the worker', () => {
  /** A pool that remembers every statement's text and parameters, as `log_statement = 'all'` would. */
  function observedPool(): { pool: pg.Pool; sent: string[] } {
    const pool = new pg.Pool({ connectionString: inject('databaseUrl'), max: 4 });
    const sent: string[] = [];
    const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
    (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      sent.push(JSON.stringify(args, (_, value: unknown) => (Buffer.isBuffer(value) ? value.toString('hex') : value)));
      return query(...args);
    };
    return { pool, sent };
  }

  it('no unsalted hash of a call: not the plain sha256 of its envelope, nor of its arguments, in any statement', async () => {
    const { pool, sent } = observedPool();
    try {
      const workflowId = `wf-${randomBytes(4).toString('hex')}`;
      const args: [{ to: string; text: string }] = [{ to: '+4915112345678', text: 'Your code is 4711' }];
      const sendSms = async (_message: (typeof args)[number]) => 'sent';
      const environment = worker(store({ secret: OLD }, pool), workflowId);
      await environment.run(sendSms, ...args);
      await environment.run(sendSms, ...args);
      const argsText = canonicalize(args, 'args');
      const scopeMaterial = { scope: 'workflow', workflowId };
      const unsalted = [
        canonicalize({ v: 1, namespace: 'default', scopeMaterial, activityType: 'sendSms', semanticArgs: args }),
        argsText,
      ].map((text) => createHash('sha256').update(text).digest('hex'));
      expect(sent.length).toBeGreaterThan(2);
      for (const hash of unsalted) expect(sent.filter((statement) => statement.includes(hash))).toEqual([]);
    } finally {
      await pool.end();
    }
  });

  it('a row planted at the key the call would have had unsalted cannot refuse it: the call runs, once', async () => {
    const workflowId = `wf-${randomBytes(4).toString('hex')}`;
    const args: [{ orderId: string; cents: number }] = [{ orderId: 'o-9', cents: 100 }];
    const unsaltedKey = createHash('sha256')
      .update(canonicalize({ v: 1, namespace: 'default', scopeMaterial: { scope: 'workflow', workflowId }, activityType: 'chargeCard', semanticArgs: args }))
      .digest('hex');
    await schema.pool.query(
      `INSERT INTO "${schema.name}".claims (key, state, token, fingerprint, namespace, activity_type, activity_id, attempt, claimed_by, outcome_note)
       VALUES ($1, 'unknown', gen_random_uuid(), 'junk', 'default', 'chargeCard', '1', 1, 'attacker', 'planted')`,
      [unsaltedKey],
    );
    let charges = 0;
    const chargeCard = async (_order: (typeof args)[number]) => `charged (${++charges})`;
    const environment = worker(store({ secret: OLD }), workflowId);
    await expect(environment.run(chargeCard, ...args)).resolves.toBe('charged (1)');
    await expect(environment.run(chargeCard, ...args)).resolves.toBe('charged (1)');
    expect(charges).toBe(1);
  });
});
