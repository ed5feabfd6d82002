/**
 * The three roles SECURITY.md and the README document, created in real
 * Postgres with nothing but what `migrate --worker-role --operator-role`
 * grants: the migrator migrates (through the CLI), the worker claims, settles,
 * appends to the ledger and records a refused workflow, and the operator runs
 * every CLI command. Each is also refused what it must not do.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { WorkflowHandle } from '@temporalio/client';
import { OutcomeUnknownError, PostgresClaimStore, grantScript, idempotencyInterceptors, migrate } from '../../src/index.js';
import { PENDING_REFUSALS_QUERY } from '../../src/operator-decision.js';
import type { PendingRefusal } from '../../src/workflow/index.js';
import { runCli } from '../support/cli.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

const temporal = useTemporal();
const suffix = randomBytes(3).toString('hex');
const schemaName = `t_roles_${suffix}`;
const role = { migrator: `ti_migrator_${suffix}`, worker: `ti_worker_${suffix}`, operator: `ti_operator_${suffix}` } as const;
const PASSWORD = `pw_${suffix}`;
const SECRET = 'roles-test-secret-of-at-least-32-bytes-0123456789';

let admin: pg.Pool;
const pools: pg.Pool[] = [];

function urlFor(user: string): string {
  const url = new URL(inject('databaseUrl'));
  url.username = user;
  url.password = PASSWORD;
  return url.toString();
}

function poolAs(user: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: urlFor(user), max: 5 });
  pool.on('error', () => undefined);
  pools.push(pool);
  return pool;
}

const cliAs = (user: string, ...args: string[]) =>
  runCli([...args, '--schema', schemaName], { DATABASE_URL: urlFor(user), TEMPORAL_ADDRESS: inject('temporalAddress') });

/** The SQLSTATE a statement fails with, or null when it succeeds. */
async function sqlStateOf(pool: pg.Pool, statement: string): Promise<string | null> {
  try {
    await pool.query(statement);
    return null;
  } catch (error) {
    return (error as { code?: string }).code ?? 'unknown';
  }
}

beforeAll(async () => {
  admin = new pg.Pool({ connectionString: inject('databaseUrl') });
  const { rows } = await admin.query<{ db: string }>('SELECT current_database() AS db');
  for (const name of Object.values(role)) await admin.query(`CREATE ROLE "${name}" LOGIN PASSWORD '${PASSWORD}'`);
  // The migrator creates the schema on its first run, and so owns it; nobody else gets more than CONNECT.
  await admin.query(`GRANT CREATE ON DATABASE "${rows[0]!.db}" TO "${role.migrator}"`);
});

afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.end()));
  await admin.query(`DROP SCHEMA IF EXISTS "${schemaName}" CASCADE`);
  for (const name of Object.values(role)) {
    await admin.query(`DROP OWNED BY "${name}" CASCADE`);
    await admin.query(`DROP ROLE "${name}"`);
  }
  await admin.end();
});

describe('least-privilege roles', () => {
  it('the migrator creates the schema and grants the other two, through the CLI; a second run changes nothing', async () => {
    const first = await cliAs(role.migrator, 'migrate', '--worker-role', role.worker, '--operator-role', role.operator, '--json');
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ schema: schemaName, granted: `worker: ${role.worker}, operator: ${role.operator}` });
    const owner = await admin.query<{ owner: string }>('SELECT nspowner::regrole::text AS owner FROM pg_namespace WHERE nspname = $1', [schemaName]);
    expect(owner.rows[0]?.owner).toBe(role.migrator);

    const again = await cliAs(role.migrator, 'migrate', '--worker-role', role.worker, '--operator-role', role.operator, '--json');
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout).applied).toBe('none (already current)');
  });

  it('the worker: migrate() on the current schema needs no DDL; claims, settles, audits, and records a refused workflow', async () => {
    const pool = poolAs(role.worker);
    expect((await migrate(pool, { schema: schemaName })).applied).toEqual([]);
    const store = new PostgresClaimStore({ pool, schema: schemaName });
    const sent: string[] = [];
    let dropTheLine = false;
    const activities = {
      send: async (to: string) => {
        sent.push(to);
        if (dropTheLine) throw new OutcomeUnknownError('the line dropped after the vendor took it');
        return `sent to ${to}`;
      },
    };
    const taskQueue = uniqueName('tq');
    const interceptors = { activity: idempotencyInterceptors({ store, audit: true }) };
    const workflowId = uniqueName('wf');
    await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      const first = await temporal.client.workflow.execute('callActivity', { taskQueue, workflowId, args: [{ activity: 'send', args: ['+4911'] }] });
      expect(first).toEqual(['sent to +4911']);
      dropTheLine = true;
      const handle = await temporal.client.workflow.start('resumableCallActivity', {
        taskQueue,
        workflowId: uniqueName('wf-refused'),
        args: [{ activity: 'send', args: ['+4922'] }],
      });
      const pending = await waitingOn(handle);
      refused = { key: pending.key, workflowId: handle.workflowId, taskQueue };
    });
    await store.close();
    expect(sent).toEqual(['+4911', '+4922']);

    const ledger = await admin.query(`SELECT event, outcome FROM "${schemaName}".ledger ORDER BY id`);
    expect(ledger.rows).toEqual([
      { event: 'started', outcome: null },
      { event: 'finished', outcome: 'completed' },
      { event: 'started', outcome: null },
      { event: 'finished', outcome: 'outcome-unknown' },
    ]);
    const waiters = await admin.query(`SELECT workflow_id FROM "${schemaName}".waiters WHERE key = $1`, [refused!.key]);
    expect(waiters.rows).toEqual([{ workflow_id: refused!.workflowId }]);
  });

  it('the worker may not change the key format in force, read or change the ledger, or write the operator trail', async () => {
    const pool = poolAs(role.worker);
    const s = `"${schemaName}"`;
    expect(await sqlStateOf(pool, `UPDATE ${s}.settings SET key_format = 1`)).toBe('42501');
    expect(await sqlStateOf(pool, `SELECT * FROM ${s}.ledger`)).toBe('42501');
    expect(await sqlStateOf(pool, `DELETE FROM ${s}.ledger`)).toBe('42501');
    expect(await sqlStateOf(pool, `INSERT INTO ${s}.operator_actions (action) VALUES ('forged')`)).toBe('42501');
    expect(await sqlStateOf(pool, `CREATE TABLE ${s}.mine (id int)`)).toBe('42501');
    expect(await sqlStateOf(pool, `SELECT ${s}.prune_ledger('30 days', 'hiding a call', false)`)).toBe('42501');
  });

  it('the operator runs every CLI command; resolve signals the refused workflow, which returns the result', async () => {
    const key = refused!.key;
    const run = (...args: string[]) => cliAs(role.operator, ...args);
    for (const args of [['list'], ['show', key], ['ledger'], ['keys', 'status'], ['prune', '--older-than', '30d', '--dry-run']]) {
      const result = await run(...args);
      expect({ args, stderr: result.stderr, code: result.code }).toEqual({ args, stderr: '', code: 0 });
    }
    const resolved = await run('resolve', key, '--result', '"sent by hand"', '--reason', 'the vendor shows it delivered');
    expect(resolved.stderr).toContain(`Signalled workflow ${refused!.workflowId}: resolved.`);
    expect(resolved.code).toBe(0);
    // The worker role reads the record the operator wrote, and the call is not made again.
    const store = new PostgresClaimStore({ pool: poolAs(role.worker), schema: schemaName });
    const calls: string[] = [];
    const result = await temporal.withWorker(
      {
        taskQueue: refused!.taskQueue,
        activities: { send: async (to: string) => (calls.push(to), 'called again') },
        interceptors: { activity: idempotencyInterceptors({ store }) },
      },
      () => temporal.client.workflow.getHandle(refused!.workflowId).result(),
    );
    await store.close();
    expect(result).toEqual(['sent by hand']);
    expect(calls).toEqual([]);

    // An hour later, as far as the rows tell: the claim finished and its waiter was told.
    await admin.query(`UPDATE "${schemaName}".claims SET finished_at = now() - interval '1 hour'`);
    await admin.query(`UPDATE "${schemaName}".waiters SET signalled_at = now() - interval '1 hour'`);
    const pruned = await run('prune', '--older-than', '30m', '--allow-short', '--reason', 'roles test');
    expect({ stderr: pruned.stderr, code: pruned.code }).toEqual({ stderr: '', code: 0 });
    expect(await admin.query(`SELECT key FROM "${schemaName}".claims`)).toMatchObject({ rowCount: 0 });

    const absent = await run('release-absent', key, '--reason', 'roles test', '--no-signal');
    expect({ stderr: absent.stderr, code: absent.code }).toEqual({ stderr: '', code: 0 });
    const activate = (...flags: string[]) =>
      runCli(['keys', 'activate', '--schema', schemaName, '--reason', 'roles test', ...flags], {
        DATABASE_URL: urlFor(role.operator),
        TEMPORAL_IDEMPOTENCY_SECRET: SECRET,
      });
    // The worker that claimed above holds no secret: refused, naming it, until it is gone (--force).
    const refusedActivation = await activate();
    expect(refusedActivation.code).toBe(4);
    expect(refusedActivation.stderr).toMatch(/worker\(s\) seen claiming in the last 5 minutes do not hold secret/);
    const activated = await activate('--force');
    expect({ stderr: activated.stderr, code: activated.code }).toEqual({ stderr: '', code: 0 });
    const trail = await admin.query<{ action: string; database_user: string }>(
      `SELECT action, database_user FROM "${schemaName}".operator_actions ORDER BY id`,
    );
    expect(trail.rows.map((row) => row.database_user)).toEqual(trail.rows.map(() => role.operator));
    expect(trail.rows.map((row) => row.action)).toEqual(expect.arrayContaining(['resolve', 'prune', 'release']));
  });

  it('the operator may not forge a claim, change the ledger or the trail, or change the schema', async () => {
    const pool = poolAs(role.operator);
    const s = `"${schemaName}"`;
    expect(await sqlStateOf(pool, `INSERT INTO ${s}.claims (key) VALUES ('forged')`)).toBe('42501');
    expect(await sqlStateOf(pool, `DELETE FROM ${s}.ledger`)).toBe('42501');
    expect(await sqlStateOf(pool, `UPDATE ${s}.operator_actions SET reason = 'edited'`)).toBe('42501');
    expect(await sqlStateOf(pool, `ALTER TABLE ${s}.claims DISABLE TRIGGER USER`)).toBe('42501');
    // Only through the owner's function, which keeps a day at least.
    expect(await sqlStateOf(pool, `SELECT ${s}.prune_ledger('2 hours', 'hiding a call', false)`)).toBe('TI003');
    expect(await sqlStateOf(pool, `SELECT ${s}.prune_ledger('30 days', 'retention', false)`)).toBeNull();
  });

  it('the README gives exactly the GRANTs migrate applies', async () => {
    const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8');
    const documented = readme.match(/<!-- grants: generated by `temporal-idempotency grants` -->\s*```sql\n([\s\S]*?)```/);
    expect(documented, 'README.md has no generated grants block').not.toBeNull();
    expect(documented![1]!.trim()).toBe(grantScript({ worker: 'idempotency_worker', operator: 'idempotency_operator' }));
  });
});

let refused: { key: string; workflowId: string; taskQueue: string } | undefined;

async function waitingOn(handle: WorkflowHandle): Promise<PendingRefusal> {
  for (let i = 0; i < 200; i++) {
    const [pending] = await handle.query<PendingRefusal[]>(PENDING_REFUSALS_QUERY);
    if (pending) return pending;
    await sleep(100);
  }
  throw new Error('the workflow never reported a refused call');
}
