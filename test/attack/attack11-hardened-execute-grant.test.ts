/**
 * Attack 11: migration 11 adds signed_by_retired(), a SECURITY DEFINER function every settling
 * statement (complete, its batch, mark-unknown, hand-back) calls as the worker. Migration 9 revokes
 * EXECUTE from PUBLIC on its own SECURITY DEFINER functions and `grantStatements` grants the operator
 * what it needs by name; for signed_by_retired the worker relies on PUBLIC's implicit EXECUTE, which
 * `grantStatements` never grants. A database hardened as PostgreSQL's docs advise for SECURITY DEFINER
 * functions (`ALTER DEFAULT PRIVILEGES ... REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC` for the migrator)
 * leaves the worker able to claim (triggers need no EXECUTE) but unable to record any outcome:
 * every call that happened is left `claimed`, and later refused as an orphan. Before migration 11,
 * the same roles worked.
 *
 * Expected: with exactly what `migrate({ grantTo: { worker } })` grants, the worker records the outcome.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { PostgresClaimStore, migrate } from '../../src/index.js';
import type { StoreLogger } from '../../src/index.js';
import { claimRequest } from '../support/claims.js';

const suffix = randomBytes(3).toString('hex');
const name = `t_a11_exec_${suffix}`;
const migrator = `ti_a11_m_${suffix}`;
const workerRole = `ti_a11_w_${suffix}`;
const quiet: StoreLogger = { warn: () => undefined, error: () => undefined };
const pools: pg.Pool[] = [];
const newPool = (options?: string) => {
  const p = new pg.Pool({ connectionString: inject('databaseUrl'), max: 4, ...(options ? { options } : {}) });
  p.on('error', () => undefined);
  pools.push(p);
  return p;
};

afterAll(async () => {
  const admin = pools[0]!;
  await Promise.all(pools.slice(1).map((p) => p.end()));
  await admin.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
  await admin.query(`DROP OWNED BY "${migrator}"`).catch(() => undefined);
  await admin.query(`DROP OWNED BY "${workerRole}"`).catch(() => undefined);
  await admin.query(`DROP ROLE IF EXISTS "${workerRole}"`);
  await admin.query(`DROP ROLE IF EXISTS "${migrator}"`);
  await admin.end();
});

describe('a worker role in a database whose functions are not executable by PUBLIC', () => {
  it('records the outcome of a call with exactly the grants migrate gives it', async () => {
    const admin = newPool();
    const { rows: db } = await admin.query<{ d: string }>('SELECT current_database() AS d');
    await admin.query(`CREATE ROLE "${migrator}" NOLOGIN`);
    await admin.query(`CREATE ROLE "${workerRole}" NOLOGIN`);
    await admin.query(`GRANT CREATE ON DATABASE "${db[0]!.d}" TO "${migrator}"`);
    // The hardening PostgreSQL's docs suggest for SECURITY DEFINER functions, for whatever the migrator creates.
    await admin.query(`ALTER DEFAULT PRIVILEGES FOR ROLE "${migrator}" REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC`);

    const migratorPool = newPool(`-c role=${migrator}`);
    await migrate(migratorPool, { schema: name, grantTo: { worker: workerRole } });

    const workerPool = newPool(`-c role=${workerRole}`);
    const { rows: who } = await workerPool.query<{ u: string }>('SELECT current_user AS u');
    expect(who[0]!.u).toBe(workerRole);
    const worker = new PostgresClaimStore({ pool: workerPool, schema: name, logger: quiet });
    const request = claimRequest({ activityType: 'placeCall' });
    const begun = await worker.begin(request, 60_000);
    expect(begun.won, 'the worker role claims (the call then goes out)').toBe(true);

    const recorded = await worker
      .complete(begun.claim, defaultPayloadConverter.toPayload({ callId: 'CA123' }))
      .then(
        (written) => written,
        (error: Error & { code?: string }) => `threw ${error.code ?? ''} ${error.message}`,
      );
    const { rows } = await admin.query<{ state: string }>(`SELECT state FROM "${name}".claims WHERE key = $1`, [request.key]);
    expect({ recorded, state: rows[0]?.state }, 'the call happened: its outcome is on record').toEqual({ recorded: true, state: 'completed' });
    await worker.close();
  });
});
