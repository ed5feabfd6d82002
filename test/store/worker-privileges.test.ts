/**
 * A worker role that may claim but not settle would make the call and record nothing: every later
 * attempt, retry or reset would be refused as an orphan. So each store checks, before its first
 * claim, that its role may do all a worker does in the schema (found when a DBA granted a worker
 * role through ALTER DEFAULT PRIVILEGES, or granted it less than `migrate --worker-role` does);
 * without it nothing is claimed, and the error names what is missing.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { PostgresClaimStore, StorePrivilegesMissingError, migrate } from '../../src/index.js';
import type { StoreLogger } from '../../src/index.js';
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
  const names = { schema: `t_priv_${tag}_${suffix}`, migrator: `ti_priv_m_${tag}_${suffix}`, worker: `ti_priv_w_${tag}_${suffix}` };
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
  }
}

describe('what a worker role may do, checked before its first claim', () => {
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

  it('a worker role whose UPDATE and DELETE on claims were taken away claims nothing, and names what it lacks', async () => {
    const { schema, migrator, worker } = await roles('revk');
    const migratorPool = newPool(`-c role=${migrator}`);
    await migrate(migratorPool, { schema, grantTo: { worker } });
    await migratorPool.query(`REVOKE UPDATE, DELETE ON "${schema}".claims FROM "${worker}"`);

    const store = new PostgresClaimStore({ pool: newPool(`-c role=${worker}`), schema, logger: quiet });
    const refusal = await store.begin(claimRequest({ activityType: 'placeCall' }), 60_000).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(StorePrivilegesMissingError);
    expect((refusal as StorePrivilegesMissingError).missing).toEqual(['UPDATE on claims', 'DELETE on claims']);
    expect((refusal as Error).message).not.toContain(worker); // it reaches workflow history
    const { rows } = await admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".claims`);
    expect(rows[0]!.n, 'nothing was claimed').toBe(0);
  });
});
