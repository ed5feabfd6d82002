/**
 * The three roles SECURITY.md and the README document, created in real
 * Postgres with nothing but what `migrate --worker-role --operator-role`
 * grants: the migrator migrates (through the CLI), the worker claims, settles,
 * appends to the ledger and records a refused workflow, and the operator runs
 * every CLI command. Each is also refused what it must not do. They work in a
 * database of their own, set up as the README says: CONNECT taken from PUBLIC
 * and given to the three roles, so a fourth role cannot connect.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { OutcomeUnknownError, PostgresClaimStore, grantScript, idempotencyInterceptors, migrate } from '../../src/index.js';
import { RecordSecret } from '../../src/store/record-signing.js';
import { runCli } from '../support/cli.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { waitingOn } from '../support/pending-refusal.js';

const temporal = useTemporal();
const suffix = randomBytes(3).toString('hex');
const schemaName = `t_roles_${suffix}`;
const database = `ti_roles_${suffix}`;
const role = { migrator: `ti_migrator_${suffix}`, worker: `ti_worker_${suffix}`, operator: `ti_operator_${suffix}` } as const;
/** A role of the same cluster that was never given the database. */
const outsider = `ti_outsider_${suffix}`;
const PASSWORD = `pw_${suffix}`;
const SECRET = 'roles-test-secret-of-at-least-32-bytes-0123456789';
const NEXT_SECRET = 'roles-test-next-secret-of-at-least-32-bytes-987654';
const ROTATION_CONFIG = 'test/cli/fixtures/rotation-worker-config.ts';

/** The test rig's own connection (to its database), which creates and drops this file's database and roles. */
let rig: pg.Pool;
/** The superuser, in this file's database. */
let admin: pg.Pool;
const pools: pg.Pool[] = [];

function urlFor(user: string, password = PASSWORD): string {
  const url = new URL(inject('databaseUrl'));
  url.username = user;
  url.password = password;
  url.pathname = `/${database}`;
  return url.toString();
}

function poolAs(user: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: urlFor(user), max: 5 });
  pool.on('error', () => undefined);
  pools.push(pool);
  return pool;
}

const cliAs = (user: string, ...args: string[]) => cliWith({ TEMPORAL_ADDRESS: inject('temporalAddress') }, user, ...args);
const cliWith = (env: Record<string, string>, user: string, ...args: string[]) =>
  runCli([...args, '--schema', schemaName], { DATABASE_URL: urlFor(user), ...env });

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
  rig = new pg.Pool({ connectionString: inject('databaseUrl') });
  await rig.query(`CREATE DATABASE "${database}"`);
  const superuser = new URL(inject('databaseUrl'));
  superuser.pathname = `/${database}`;
  admin = new pg.Pool({ connectionString: superuser.toString() });
  // DROP DATABASE ... WITH (FORCE) at the end terminates whatever is still connected (57P01): expected then.
  admin.on('error', () => undefined);
  rig.on('error', () => undefined);
  for (const name of [...Object.values(role), outsider]) await rig.query(`CREATE ROLE "${name}" LOGIN PASSWORD '${PASSWORD}'`);
  // As the README's Roles section says, once, as a superuser: the migrator creates the schema on its
  // first run, and so owns it; only the three roles may connect.
  await admin.query(`GRANT CREATE ON DATABASE "${database}" TO "${role.migrator}"`);
  await admin.query(`REVOKE CONNECT ON DATABASE "${database}" FROM PUBLIC`);
  await admin.query(`GRANT CONNECT ON DATABASE "${database}" TO "${role.migrator}", "${role.worker}", "${role.operator}"`);
});

afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.end()));
  await admin?.end();
  await rig.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
  for (const name of [...Object.values(role), outsider]) await rig.query(`DROP ROLE IF EXISTS "${name}"`);
  await rig.end();
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
      // Two calls whose outcome nobody knows: the operator resolves one and releases the other.
      for (const [to, name] of [['+4922', 'toResolve'], ['+4933', 'toRelease']] as const) {
        const handle = await temporal.client.workflow.start('resumableCallActivity', {
          taskQueue,
          workflowId: uniqueName('wf-refused'),
          args: [{ activity: 'send', args: [to] }],
        });
        const pending = await waitingOn(handle);
        refused[name] = { key: pending.key, workflowId: handle.workflowId, taskQueue };
      }
    });
    expect(sent).toEqual(['+4911', '+4922', '+4933']);

    const ledger = await admin.query(`SELECT event, outcome FROM "${schemaName}".ledger ORDER BY id`);
    expect(ledger.rows).toEqual([
      { event: 'started', outcome: null },
      { event: 'finished', outcome: 'completed' },
      { event: 'started', outcome: null },
      { event: 'finished', outcome: 'outcome-unknown' },
      { event: 'started', outcome: null },
      { event: 'finished', outcome: 'outcome-unknown' },
    ]);
    for (const { key, workflowId } of [refused.toResolve!, refused.toRelease!]) {
      const waiters = await admin.query(`SELECT workflow_id FROM "${schemaName}".waiters WHERE key = $1`, [key]);
      expect(waiters.rows).toEqual([{ workflow_id: workflowId }]);
    }
  });

  it('the worker may not change the key salt, read or change the ledger, or write the operator trail', async () => {
    const pool = poolAs(role.worker);
    const s = `"${schemaName}"`;
    expect(await sqlStateOf(pool, `UPDATE ${s}.settings SET key_salt = '\\x00000000000000000000000000000000'`)).toBe('42501');
    expect(await sqlStateOf(pool, `DELETE FROM ${s}.settings`)).toBe('42501');
    expect(await sqlStateOf(pool, `SELECT * FROM ${s}.ledger`)).toBe('42501');
    expect(await sqlStateOf(pool, `DELETE FROM ${s}.ledger`)).toBe('42501');
    expect(await sqlStateOf(pool, `INSERT INTO ${s}.operator_actions (action) VALUES ('forged')`)).toBe('42501');
    expect(await sqlStateOf(pool, `CREATE TABLE ${s}.mine (id int)`)).toBe('42501');
  });

  it('the operator runs every CLI command; resolve, release and resume reach the refused workflows, which finish', async () => {
    const toResolve = refused.toResolve!;
    const toRelease = refused.toRelease!;
    const run = (...args: string[]) => cliAs(role.operator, ...args);
    const succeeds = async (...args: string[]) => {
      const result = await run(...args);
      expect({ args, stderr: result.stderr, code: result.code }).toEqual({ args, stderr: '', code: 0 });
      return result;
    };
    for (const args of [['list'], ['show', toResolve.key], ['ledger'], ['keys', 'status'], ['prune', '--older-than', '30d', '--dry-run']]) await succeeds(...args);
    const resolved = await run('resolve', toResolve.key, '--result', '"sent by hand"', '--reason', 'the vendor shows it delivered');
    expect(resolved.stderr).toContain(`Signalled workflow ${toResolve.workflowId}: resolved.`);
    expect(resolved.code).toBe(0);
    // Released without the signal (as when the CLI could not reach Temporal), then resumed: resume sends it.
    await succeeds('release', toRelease.key, '--reason', 'the vendor has no such call', '--no-signal');
    const resumed = await run('resume', toRelease.key);
    expect({ stderr: resumed.stderr, code: resumed.code }).toEqual({ stderr: `Signalled workflow ${toRelease.workflowId}: released.\n`, code: 0 });
    // The worker role reads the record the operator wrote (that call is not made again) and makes the released one.
    const store = new PostgresClaimStore({ pool: poolAs(role.worker), schema: schemaName });
    const calls: string[] = [];
    const results = await temporal.withWorker(
      {
        taskQueue: toResolve.taskQueue,
        activities: { send: async (to: string) => (calls.push(to), 'called again') },
        interceptors: { activity: idempotencyInterceptors({ store }) },
      },
      () => Promise.all([toResolve, toRelease].map(({ workflowId }) => temporal.client.workflow.getHandle(workflowId).result())),
    );
    expect(results).toEqual([['sent by hand'], ['called again']]);
    expect(calls).toEqual(['+4933']);

    // The deployment adopts a record secret, then rotates it: `keys re-sign` as the operator, each time.
    const keys = (env: Record<string, string>, ...args: string[]) =>
      runCli(['keys', ...args, '--schema', schemaName, '--reason', 'roles test'], { DATABASE_URL: urlFor(role.operator), ...env });
    const resignWith = (secret: string, previous: string) =>
      keys({ TEMPORAL_IDEMPOTENCY_WORKER_CONFIG: ROTATION_CONFIG, TEST_NEW_SECRET: secret, TEST_OLD_SECRET: previous }, 're-sign', '--json');
    for (const [secret, previous] of [[SECRET, 'unsigned'], [NEXT_SECRET, SECRET]] as const) {
      const resigned = await resignWith(secret, previous);
      expect({ stderr: resigned.stderr, code: resigned.code }).toEqual({ stderr: '', code: 0 });
      expect(JSON.parse(resigned.stdout)).toMatchObject({ signed_with: new RecordSecret(secret).id, resigned_rows: 3 });
    }
    const status = JSON.parse((await run('keys', 'status', '--json')).stdout) as unknown;
    expect(status).toEqual([{ secret: new RecordSecret(NEXT_SECRET).id, rows: 3, held_as: 'not-held' }]);

    // An hour later, as far as the rows tell: the claims finished and their waiters were told; the ledger's calls are days old
    // (its owner, the migrator, is the one role the append-only trigger lets change it).
    await admin.query(`UPDATE "${schemaName}".claims SET finished_at = now() - interval '1 hour'`);
    await admin.query(`UPDATE "${schemaName}".waiters SET signalled_at = now() - interval '1 hour'`);
    await poolAs(role.migrator).query(`UPDATE "${schemaName}".ledger SET at = now() - interval '3 days'`);
    // Temporal knows the workflows closed seconds ago, and prune would keep their claims: prune without asking it.
    const prune = (user: string, ...args: string[]) =>
      cliWith({ TEMPORAL_ADDRESS: '127.0.0.1:1' }, user, 'prune', '--older-than', '30m', '--force', '--reason', 'roles test', '--json', ...args);
    // The ledger is the migrator's to prune: the operator is refused before anything goes.
    const refusedLedger = await prune(role.operator, '--ledger-older-than', '2d');
    expect(refusedLedger.stderr).toMatch(/append-only for every role but its owner: prune it as the role that ran migrate/);
    expect(refusedLedger.code).toBe(4);
    expect(await admin.query(`SELECT key FROM "${schemaName}".claims`)).toMatchObject({ rowCount: 3 });
    const pruned = await prune(role.operator);
    expect(pruned.stderr).toMatch(/^Temporal cannot be asked \(cannot connect to Temporal at 127\.0\.0\.1:1[^\n]*\n$/);
    expect(pruned.code).toBe(0);
    expect(JSON.parse(pruned.stdout)).toMatchObject({ dry_run: false, pruned: 3, ledger_pruned: null });
    expect(await admin.query(`SELECT key FROM "${schemaName}".claims`)).toMatchObject({ rowCount: 0 });
    const ledgerPruned = await prune(role.migrator, '--ledger-older-than', '2d');
    expect(ledgerPruned.code).toBe(0);
    expect(JSON.parse(ledgerPruned.stdout)).toMatchObject({ pruned: 0, ledger_pruned: 6 });
    expect(await admin.query(`SELECT id FROM "${schemaName}".ledger`)).toMatchObject({ rowCount: 0 });

    const absent = await run('release-absent', toResolve.key, '--reason', 'roles test', '--no-signal');
    expect({ stderr: absent.stderr, code: absent.code }).toEqual({ stderr: '', code: 0 });

    const trail = await admin.query<{ action: string; database_user: string }>(
      `SELECT action, database_user FROM "${schemaName}".operator_actions ORDER BY id`,
    );
    // Every change is the operator's, but the migrator's prune of the ledger (and of claims, none left by then).
    expect(trail.rows.filter((row) => row.database_user === role.migrator).map((row) => row.action)).toEqual(['prune', 'prune-ledger']);
    expect(new Set(trail.rows.filter((row) => row.database_user !== role.migrator).map((row) => row.database_user))).toEqual(new Set([role.operator]));
    expect(trail.rows.map((row) => row.action)).toEqual(expect.arrayContaining(['resolve', 'release', 're-sign', 'prune', 'prune-ledger']));
  });

  it('a role not granted CONNECT cannot connect', async () => {
    const client = new pg.Client({ connectionString: urlFor(outsider) });
    const refusal = await client.connect().then(
      () => null,
      (error: unknown) => error as { code?: string; message?: string },
    );
    await client.end().catch(() => undefined);
    expect(refusal).toMatchObject({ code: '42501', message: expect.stringMatching(/permission denied for database/) });
  });

  it('the operator may not forge a claim, change the ledger or the trail, or change the schema', async () => {
    const pool = poolAs(role.operator);
    const s = `"${schemaName}"`;
    expect(await sqlStateOf(pool, `INSERT INTO ${s}.claims (key) VALUES ('forged')`)).toBe('42501');
    expect(await sqlStateOf(pool, `DELETE FROM ${s}.ledger`)).toBe('42501');
    expect(await sqlStateOf(pool, `UPDATE ${s}.operator_actions SET reason = 'edited'`)).toBe('42501');
    expect(await sqlStateOf(pool, `ALTER TABLE ${s}.claims DISABLE TRIGGER USER`)).toBe('42501');
    expect(await sqlStateOf(pool, `UPDATE ${s}.settings SET key_salt = key_salt`)).toBe('42501');
  });

  it('the operations page gives exactly the GRANTs migrate applies', async () => {
    const readme = await readFile(new URL('../../docs/operations.md', import.meta.url), 'utf8');
    const documented = readme.match(/<!-- grants: generated by `temporal-idempotency grants` -->\s*```sql\n([\s\S]*?)```/);
    expect(documented, 'docs/operations.md has no generated grants block').not.toBeNull();
    expect(documented![1]!.trim()).toBe(grantScript({ worker: 'idempotency_worker', operator: 'idempotency_operator' }));
  });
});

const refused: Partial<Record<'toResolve' | 'toRelease', { key: string; workflowId: string; taskQueue: string }>> = {};

