/**
 * Attack 12: commit 4f8ddb6 revokes EXECUTE on signed_by_retired() from PUBLIC (migration 11) and
 * grants it to the worker role by name, but only when the grants are run again after migrating
 * (`migrate --worker-role`, or a DBA re-running `temporal-idempotency grants`). Every settling
 * statement (complete, its batch, mark-unknown, hand-back) calls the function; the claim does not
 * (its trigger needs no EXECUTE). So a worker role that has its table privileges but not that one
 * grant (a DBA who ran the printed grants before this migration and did not run them again; or one
 * who grants tables through ALTER DEFAULT PRIVILEGES, as many do) claims, makes the call, and then
 * cannot record its outcome: `permission denied for function signed_by_retired` on every record.
 * The claim stays `claimed`, its lease lapses, and every later attempt, retry or reset is refused as
 * an orphan (or re-runs / asks the vendor): every call's record is lost. Nothing checks at start
 * (checkOnce: schema version, durability, key format) that the role can settle what it claims.
 * Before the amendment (PUBLIC kept EXECUTE) the same roles worked.
 *
 * Expected: a worker that cannot record an outcome does not claim (a clear error before the call),
 * or it records the outcome.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { PostgresClaimStore, StorePrivilegesMissingError, migrate } from '../../src/index.js';
import type { StoreLogger } from '../../src/index.js';
import { applyMigrations } from '../../src/store/migrate.js';
import { MIGRATIONS } from '../../src/store/migrations/index.js';
import { grantStatements } from '../../src/store/roles.js';
import { claimRequest } from '../support/claims.js';

const suffix = randomBytes(3).toString('hex');
const quiet: StoreLogger = { warn: () => undefined, error: () => undefined };
const pools: pg.Pool[] = [];
const cleanup: string[] = [];
const newPool = (options?: string) => {
  const p = new pg.Pool({ connectionString: inject('databaseUrl'), max: 4, ...(options ? { options } : {}) });
  p.on('error', () => undefined);
  pools.push(p);
  return p;
};
const admin = newPool();

afterAll(async () => {
  await Promise.all(pools.slice(1).map((p) => p.end()));
  for (const statement of cleanup) await admin.query(statement).catch(() => undefined);
  await admin.end();
});

async function roles(tag: string): Promise<{ schema: string; migrator: string; worker: string }> {
  const names = { schema: `t_a12_${tag}_${suffix}`, migrator: `ti_a12_m_${tag}_${suffix}`, worker: `ti_a12_w_${tag}_${suffix}` };
  const { rows: db } = await admin.query<{ d: string }>('SELECT current_database() AS d');
  await admin.query(`CREATE ROLE "${names.migrator}" NOLOGIN`);
  await admin.query(`CREATE ROLE "${names.worker}" NOLOGIN`);
  await admin.query(`GRANT CREATE ON DATABASE "${db[0]!.d}" TO "${names.migrator}"`);
  cleanup.push(
    `DROP SCHEMA IF EXISTS "${names.schema}" CASCADE`,
    `DROP OWNED BY "${names.migrator}"`,
    `DROP OWNED BY "${names.worker}"`,
    `DROP ROLE IF EXISTS "${names.worker}"`,
    `DROP ROLE IF EXISTS "${names.migrator}"`,
  );
  return names;
}

/** What happened to one call through the worker role: refused before it, recorded, or made without a record. */
async function oneCall(workerPool: pg.Pool, schema: string): Promise<string> {
  const worker = new PostgresClaimStore({ pool: workerPool, schema, logger: quiet });
  try {
    const request = claimRequest({ activityType: 'placeCall' });
    let begun;
    try {
      begun = await worker.begin(request, 60_000);
    } catch (error) {
      return `refused before the call: ${(error as Error).message}`;
    }
    expect(begun.won).toBe(true);
    // The call goes out here.
    const recorded = await worker
      .complete(begun.claim, defaultPayloadConverter.toPayload({ callId: 'CA123' }))
      .then(
        (written) => (written ? 'recorded' : 'not recorded'),
        (error: Error) => `claimed and called, then not recorded: ${error.message}`,
      );
    return recorded;
  } finally {
    await worker.close();
  }
}

describe('a worker role with its table grants but not the EXECUTE grant migration 11 needs', () => {
  it('a DBA ran the printed grants before migration 11 and did not run them again after migrating', async () => {
    const { schema, migrator, worker } = await roles('once');
    const migratorPool = newPool(`-c role=${migrator}`);
    // The schema as it was, and the grants it needed then (every one but the function, which did not exist).
    await applyMigrations(migratorPool, schema, MIGRATIONS.filter((migration) => migration.id <= 10));
    for (const statement of grantStatements({ worker }, schema).filter((statement) => !statement.includes('signed_by_retired'))) {
      await migratorPool.query(statement);
    }
    // The upgrade: migrated, grants not run again.
    await migrate(migratorPool, { schema });

    const outcome = await oneCall(newPool(`-c role=${worker}`), schema);
    expect(outcome.startsWith('refused before the call') || outcome === 'recorded', outcome).toBe(true);
  });

  it('a DBA grants the worker its tables through ALTER DEFAULT PRIVILEGES', async () => {
    const { schema, migrator, worker } = await roles('dflt');
    await admin.query(`ALTER DEFAULT PRIVILEGES FOR ROLE "${migrator}" GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO "${worker}"`);
    await admin.query(`ALTER DEFAULT PRIVILEGES FOR ROLE "${migrator}" GRANT USAGE, SELECT ON SEQUENCES TO "${worker}"`);
    const migratorPool = newPool(`-c role=${migrator}`);
    await migrate(migratorPool, { schema });
    await migratorPool.query(`GRANT USAGE ON SCHEMA "${schema}" TO "${worker}"`);

    const outcome = await oneCall(newPool(`-c role=${worker}`), schema);
    expect(outcome.startsWith('refused before the call') || outcome === 'recorded', outcome).toBe(true);
  });

  it('a worker role whose EXECUTE and DELETE were taken away claims nothing, and names what it lacks', async () => {
    const { schema, migrator, worker } = await roles('revk');
    const migratorPool = newPool(`-c role=${migrator}`);
    await migrate(migratorPool, { schema, grantTo: { worker } });
    await migratorPool.query(`REVOKE EXECUTE ON FUNCTION "${schema}".signed_by_retired(text) FROM PUBLIC, "${worker}"`);
    await migratorPool.query(`REVOKE DELETE ON "${schema}".claims FROM "${worker}"`);

    const store = new PostgresClaimStore({ pool: newPool(`-c role=${worker}`), schema, logger: quiet });
    const refusal = await store.begin(claimRequest({ activityType: 'placeCall' }), 60_000).then(
      () => undefined,
      (error: unknown) => error,
    );
    await store.close();
    expect(refusal).toBeInstanceOf(StorePrivilegesMissingError);
    expect((refusal as StorePrivilegesMissingError).missing).toEqual(['DELETE on claims', 'EXECUTE on signed_by_retired(text)']);
    expect((refusal as Error).message).not.toContain(worker); // it reaches workflow history
    const { rows } = await admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".claims`);
    expect(rows[0]!.n, 'nothing was claimed').toBe(0);
  });
});
