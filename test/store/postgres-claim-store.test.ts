/**
 * PostgresClaimStore: the ClaimStore contract every store keeps (shared with the
 * in-memory store of `temporal-idempotency/testing`), and what only Postgres
 * does: migrations, schema names.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { ClaimOperations, InvalidIdentifierError, PostgresClaimStore, SchemaNotMigratedError, migrate } from '../../src/index.js';
import type { Waiter } from '../../src/index.js';
import { MIGRATIONS } from '../../src/store/migrations/index.js';
import { useTestSchema } from '../support/schema.js';
import { claimRequest } from '../support/claims.js';
import { describeClaimStoreContract } from './claim-store-contract.js';

const schema = useTestSchema(import.meta.filename);
const LEASE_MS = 30_000;

const request = claimRequest;

describeClaimStoreContract('PostgresClaimStore', () => ({
  store: schema.store,
  async connections(count) {
    // Each on its own connection, connected before the race, so the race is on the insert.
    const pools = await Promise.all(
      Array.from({ length: count }, async () => {
        const pool = new pg.Pool({ connectionString: inject('databaseUrl'), max: 1 });
        await pool.query('SELECT 1');
        return pool;
      }),
    );
    return {
      stores: pools.map((pool) => new PostgresClaimStore({ pool, schema: schema.name })),
      close: async () => void (await Promise.all(pools.map((pool) => pool.end()))),
    };
  },
  elapse: (ms) => sleep(ms),
  async now() {
    const { rows } = await schema.pool.query<{ now: Date }>('SELECT now() AS now');
    return rows[0]!.now;
  },
  async waitersOf(key) {
    const { rows } = await schema.pool.query<Waiter>(
      `SELECT key, namespace, workflow_id AS "workflowId", run_id AS "runId", activity_type AS "activityType"
FROM "${schema.name}".waiters WHERE key = $1`,
      [key],
    );
    return rows;
  },
  recordedArguments: (key) => new ClaimOperations(schema.pool, { schema: schema.name }).recordedArguments(key),
}));

describe('migrate', () => {
  it('is safe when many workers run it at once, and applies each migration once', async () => {
    const fresh = `t_migrate_race_${randomUUID().slice(0, 8)}`;
    const reports = await Promise.all(Array.from({ length: 8 }, () => migrate(schema.pool, { schema: fresh })));
    try {
      expect(reports.flatMap((report) => report.applied).sort((a, b) => a - b)).toEqual(MIGRATIONS.map((m) => m.id));
      const { rows } = await schema.pool.query(`SELECT id FROM "${fresh}".migrations ORDER BY id`);
      expect(rows).toEqual(MIGRATIONS.map((m) => ({ id: m.id })));
      expect((await migrate(schema.pool, { schema: fresh })).applied).toEqual([]);
    } finally {
      await schema.pool.query(`DROP SCHEMA "${fresh}" CASCADE`);
    }
  });

  it.each([
    ['an injection attempt', 'x"; DROP TABLE users; --'],
    ['upper case', 'Billing'],
    ['an empty name', ''],
    ['a name Postgres would truncate', 'a'.repeat(64)],
    ['a number', 42],
  ])('refuses %s as a schema name, naming it, before any SQL runs', async (_, bad) => {
    await expect(migrate(schema.pool, { schema: bad as string })).rejects.toThrow(InvalidIdentifierError);
    expect(() => new PostgresClaimStore({ pool: schema.pool, schema: bad as string })).toThrow(/Invalid schema/);
  });

  it('reads a claim without a lease (made before leases) as orphaned, and lets it be taken over', async () => {
    const { claim } = await schema.store.begin(request(), LEASE_MS);
    await schema.pool.query(`UPDATE "${schema.name}".claims SET lease_expires_at = NULL WHERE key = $1`, [claim.key]);

    const found = await schema.store.get(claim.key);
    expect(found).toMatchObject({ state: 'claimed', ownerAlive: false, leaseExpiresAt: null });
    const taken = await schema.store.takeOver(found!, request({ key: claim.key, attempt: 2 }), LEASE_MS);
    expect(taken).toMatchObject({ state: 'claimed', attempt: 2, ownerAlive: true });
  });

  it('names the fix when a store is used on a schema that was never migrated', async () => {
    const store = new PostgresClaimStore({ pool: schema.pool, schema: 'never_migrated_here' });
    await expect(store.begin(request(), LEASE_MS)).rejects.toThrow(SchemaNotMigratedError);
    await expect(store.begin(request(), LEASE_MS)).rejects.toThrow(/run migrate\(\)/);
  });
});
