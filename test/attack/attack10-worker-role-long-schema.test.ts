/**
 * Attack 10: signed_by_retired() called by the least-privilege worker role (README "Roles") on a
 * schema whose name is at the identifier limit (63 bytes, digits, underscores), and the lock key it
 * computes against the one lockClaimAdmission (keys retire/activate) takes.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { ClaimOperations, PostgresClaimStore, grantStatements, migrate } from '../../src/index.js';
import { lockClaimAdmission } from '../../src/store/claim-admission-lock.js';
import { DeploymentSecret, canonicalize, deriveCustomKey, keyedFormat } from '../../src/key/index.js';
import { claimRequest } from '../support/claims.js';

const suffix = randomBytes(3).toString('hex');
const name = `t_a10_${suffix}_${'0_9'.repeat(30)}`.slice(0, 63);
const workerRole = `ti_a10_w_${suffix}`;
const SECRET = 'the-secret-of-last-year-of-at-least-32-bytes-000';
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
  await admin.query(`DROP ROLE IF EXISTS "${workerRole}"`);
  await admin.end();
});

describe('signed_by_retired at the limits', () => {
  it('the worker role settles; the function waits on the lock keys activate/retire take', async () => {
    expect(name.length).toBe(63);
    const admin = newPool();
    await migrate(admin, { schema: name });
    await admin.query(`CREATE ROLE "${workerRole}" NOLOGIN`);
    for (const statement of grantStatements({ worker: workerRole }, name)) await admin.query(statement);
    await new ClaimOperations(admin, { schema: name, secret: SECRET }).activateSecret({ reason: 'first', force: true });
    const workerPool = newPool(`-c role=${workerRole}`);
    const { rows: who } = await workerPool.query<{ u: string }>('SELECT current_user AS u');
    expect(who[0]!.u).toBe(workerRole);
    const worker = new PostgresClaimStore({ pool: workerPool, schema: name, secret: SECRET });
    const f = keyedFormat(new DeploymentSecret(SECRET));
    const args = [{ call: randomUUID() }];
    const request = claimRequest({
      key: deriveCustomKey({ namespace: 'default', activityType: 'placeCall', customKey: args[0]!.call }, f),
      fingerprint: f.fingerprint(canonicalize(args, 'args')),
      activityType: 'placeCall',
      keyFormat: { version: 2, secretId: f.secretId },
    });
    const begun = await worker.begin(request, 60_000);
    expect(begun.won).toBe(true);

    // Hold the admission lock as keys retire does; the record must wait for it.
    const holder = await admin.connect();
    await holder.query('BEGIN');
    await lockClaimAdmission(holder, name);
    const settling = worker.complete(begun.claim, defaultPayloadConverter.toPayload({ ok: true }));
    let waiting = false;
    for (let i = 0; i < 60 && !waiting; i++) {
      const { rows } = await admin.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event = 'advisory' AND query LIKE '%signed_by_retired%'`,
      );
      waiting = rows[0]!.n > 0;
      if (!waiting) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await holder.query('COMMIT');
    holder.release();
    expect(waiting, 'the record waits on the same lock keys retire holds').toBe(true);
    expect(await settling).toBe(true);
    const read = await new PostgresClaimStore({ pool: admin, schema: name, secret: SECRET }).get(request.key);
    expect({ state: read?.state, authenticity: read?.authenticity }).toEqual({ state: 'completed', authenticity: 'verified' });
    await worker.close();
  });

  it.each(['repeatable read', 'serializable'])('the worker role at %s claims and settles (the checks that lock settings FOR SHARE need no UPDATE grant)', async (isolation) => {
    const admin = pools[0]!;
    const workerPool = newPool(`-c role=${workerRole} -c default_transaction_isolation=${isolation.replace(' ', '\\ ')}`);
    const { rows } = await workerPool.query<{ u: string; i: string }>(`SELECT current_user AS u, current_setting('transaction_isolation') AS i`);
    expect(rows[0]).toEqual({ u: workerRole, i: isolation });
    const worker = new PostgresClaimStore({ pool: workerPool, schema: name, secret: SECRET });
    const f = keyedFormat(new DeploymentSecret(SECRET));
    const args = [{ call: randomUUID() }];
    const request = claimRequest({
      key: deriveCustomKey({ namespace: 'default', activityType: 'placeCall', customKey: args[0]!.call }, f),
      fingerprint: f.fingerprint(canonicalize(args, 'args')),
      activityType: 'placeCall',
      keyFormat: { version: 2, secretId: f.secretId },
    });
    const begun = await worker.begin(request, 60_000);
    expect(begun.won).toBe(true);
    expect(await worker.complete(begun.claim, defaultPayloadConverter.toPayload({ ok: true }))).toBe(true);
    const read = await new PostgresClaimStore({ pool: admin, schema: name, secret: SECRET }).get(request.key);
    expect({ state: read?.state, authenticity: read?.authenticity }).toEqual({ state: 'completed', authenticity: 'verified' });
    await worker.close();
  });
});
