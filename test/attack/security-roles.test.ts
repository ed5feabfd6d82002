/**
 * Attack (round 3): SECURITY.md's "Recommended roles, per trust domain", granted exactly as written.
 *
 * The worker role gets `SELECT, INSERT, UPDATE, DELETE` on `claims` and `waiters`, `SELECT, INSERT`
 * on `ledger` and `USAGE` on its sequence; the operator role `SELECT, UPDATE, DELETE` on `claims`
 * and `waiters`, `SELECT` on `ledger`, `ledger_calls`, `SELECT, INSERT` on `operator_actions`.
 * Neither is granted `settings` (read by every worker before its first claim, and by the trigger
 * every claim fires, since the key format in force moved there) nor `migrations` (the schema
 * check). A deployment that follows the page cannot claim at all: every guarded activity fails
 * with IdempotencyStoreUnavailable on every attempt (workflows retry until their timeouts), and
 * the operator's `show` fails on the claim it must inspect. No test grants the documented roles:
 * the trust tests grant ALL TABLES.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it, afterAll } from 'vitest';
import pg from 'pg';
import { PostgresClaimStore, idempotencyInterceptors } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { runCli } from '../support/cli.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const pools: pg.Pool[] = [];
const roles: string[] = [];

afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.end()));
  for (const role of roles) {
    await schema.pool.query(`DROP OWNED BY ${role}`);
    await schema.pool.query(`DROP ROLE ${role}`);
  }
});

async function roleWith(grants: (quotedSchema: string) => string[]): Promise<string> {
  const role = `ti_role_${randomUUID().slice(0, 8)}`;
  roles.push(role);
  await schema.pool.query(`CREATE ROLE ${role} LOGIN PASSWORD 'secret-for-tests'`);
  for (const grant of grants(`"${schema.name}"`)) await schema.pool.query(`${grant} TO ${role}`);
  const url = new URL(inject('databaseUrl'));
  url.username = role;
  url.password = 'secret-for-tests';
  return url.toString();
}

describe("SECURITY.md's recommended roles", () => {
  it('let a worker claim and an operator show the claim', async () => {
    // "worker: USAGE on the schema; SELECT, INSERT, UPDATE, DELETE on claims and waiters; SELECT, INSERT
    // on ledger; USAGE on the ledger's sequence. No DDL, no ownership."
    const workerUrl = await roleWith((s) => [
      `GRANT USAGE ON SCHEMA ${s}`,
      `GRANT SELECT, INSERT, UPDATE, DELETE ON ${s}.claims, ${s}.waiters`,
      `GRANT SELECT, INSERT ON ${s}.ledger`,
      `GRANT USAGE ON SEQUENCE ${s}.ledger_id_seq`,
    ]);
    // "operator (the CLI): SELECT, UPDATE, DELETE on claims; SELECT, UPDATE, DELETE on waiters; SELECT on
    // ledger, ledger_calls; SELECT, INSERT on operator_actions and USAGE on its sequence."
    const operatorUrl = await roleWith((s) => [
      `GRANT USAGE ON SCHEMA ${s}`,
      `GRANT SELECT, UPDATE, DELETE ON ${s}.claims, ${s}.waiters`,
      `GRANT SELECT ON ${s}.ledger, ${s}.ledger_calls`,
      `GRANT SELECT, INSERT ON ${s}.operator_actions`,
      `GRANT USAGE ON SEQUENCE ${s}.operator_actions_id_seq`,
    ]);
    const workerPool = new pg.Pool({ connectionString: workerUrl, max: 4 });
    workerPool.on('error', () => undefined);
    pools.push(workerPool);

    let charges = 0;
    const activities = {
      chargeCard: async () => {
        charges++;
        return { id: 'ch_1' };
      },
    };
    const store = new PostgresClaimStore({ pool: workerPool, schema: schema.name });
    const taskQueue = uniqueName('tq');
    const interceptors = { activity: idempotencyInterceptors({ store, audit: true }) };
    const outcome = await temporal.withWorker({ taskQueue, activities, interceptors }, () =>
      temporal.client.workflow
        .execute('callActivity', { taskQueue, workflowId: uniqueName('wf'), args: [{ activity: 'chargeCard', args: [{ orderId: 'o-1' }], maximumAttempts: 3 }] })
        .then(
          (value) => ({ value }),
          (error: unknown) => {
            const failure = (error as { cause?: { cause?: { type?: string; message?: string } } }).cause?.cause;
            return { failure: failure?.type, message: failure?.message };
          },
        ),
    );
    await store.close();
    // A claim left without an outcome (by a worker with more grants): what the operator must inspect.
    const key = `${'ab'.repeat(31)}${randomUUID().slice(0, 2)}`;
    await schema.store.begin(
      {
        key,
        fingerprint: 'f',
        keyFormat: { version: 1, secretId: null },
        previousKeys: [],
        namespace: 'default',
        activityType: 'chargeCard',
        workflowId: 'wf-orphan',
        runId: null,
        activityId: '1',
        attempt: 1,
        claimedBy: 'host-a/1',
        deadlineMs: null,
      },
      1_000,
    );
    const shown = await runCli(['show', key, '--schema', schema.name], { DATABASE_URL: operatorUrl });

    // Fails today: the worker role cannot read settings (nor migrations): every attempt fails with
    // IdempotencyStoreUnavailable ("permission denied"), nothing is claimed, nothing is charged; and
    // `show` as the operator role fails reading settings.
    expect({ charges, outcome, showExit: shown.code, showStderr: shown.stderr }).toEqual({
      charges: 1,
      outcome: { value: [{ id: 'ch_1' }] },
      showExit: 0,
      showStderr: '',
    });
  });
});
