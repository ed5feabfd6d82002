/**
 * The previous release against this one's schema, with 0.1's own code (test/deploy/fixtures/release-0.1:
 * its src at commit 8a8fc4e, byte for byte), not this release's code told an older version number.
 * README "Upgrades and rollbacks": migrations 4 to 11 raise the bar past 0.1, so a 0.1 worker that
 * starts on the migrated schema is refused at its first claim (by its own check, SchemaTooNewError:
 * 0.1 does not check at start), and one that was
 * already running when the migration committed has its next claim refused by the database (the
 * claims trigger of migration 7, SQLSTATE TI002): retryably, nothing called, no row left behind,
 * until an upgraded worker takes the call. And the other way: this release's migrate() on a 0.1
 * schema keeps 0.1's claims, so what 0.1 completed is answered from its record, never called again.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import {
  IdempotencyOrphanedClaim,
  IdempotencyStoreUnavailable,
  PostgresClaimStore,
  idempotencyInterceptors,
  migrate,
} from '../../src/index.js';
import { LATEST_MIGRATION, MIGRATIONS } from '../../src/store/migrations/index.js';
import * as release01 from './fixtures/release-0.1.js';
import { activityFailureOf } from '../support/failures.js';
import { runCli } from '../support/cli.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURE = fileURLToPath(new URL('./fixtures/release-0.1/', import.meta.url));

const temporal = useTemporal();
const pool = new pg.Pool({ connectionString: inject('databaseUrl'), max: 10 });
pool.on('error', () => undefined);
const schemas: string[] = [];
const stores: PostgresClaimStore[] = [];
afterAll(async () => {
  await Promise.all(stores.map((store) => store.close()));
  for (const name of schemas) await pool.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
  await pool.end();
});

/** A deployment of 0.1: its schema made by 0.1's own migrate(). */
async function release01Schema(): Promise<string> {
  const schema = `t_rel01_${randomBytes(3).toString('hex')}`;
  schemas.push(schema);
  expect(await release01.migrate(pool, { schema })).toEqual({ schema, applied: [1, 2, 3], latest: 3 });
  return schema;
}

function currentStore(schema: string): PostgresClaimStore {
  const store = new PostgresClaimStore({ pool, schema });
  stores.push(store);
  return store;
}

/** Every call that reached an activity, in order, as `<activity>:<argument>`. */
let called: string[] = [];
let releaseHeld: () => void = () => undefined;
const activities = {
  send: async (to: string) => (called.push(`send:${to}`), `sent to ${to}`),
  charge: async (order: { orderId: string; amountCents: number }) => (
    called.push(`charge:${order.orderId}`), { id: `ch_${order.orderId}`, amountCents: order.amountCents }
  ),
  /** Sends, then says it cannot tell whether the vendor acted. */
  ambiguous: async (to: string) => {
    called.push(`ambiguous:${to}`);
    throw new release01.OutcomeUnknownError(`no answer from the vendor for ${to}`);
  },
  /** Holds until the test lets it go: a call in flight. */
  held: async (to: string) => {
    called.push(`held:${to}`);
    await new Promise<void>((resolve) => (releaseHeld = resolve));
    return `sent to ${to}`;
  },
};

type Interceptors = ReturnType<typeof idempotencyInterceptors> | ReturnType<typeof release01.idempotencyInterceptors>;

/** A worker on its own task queue with these activity interceptors, for the length of `fn`. */
function withWorker<T>(interceptors: Interceptors, fn: (run: Run) => Promise<T>): Promise<T> {
  const taskQueue = uniqueName('tq');
  const run: Run = (activity, arg, options = {}) =>
    temporal.client.workflow.execute('callActivity', {
      taskQueue,
      // Keys are workflow-scoped (the default): the same action is the same workflow id.
      workflowId: options.workflowId ?? (typeof arg === 'string' ? `wf-${arg}` : uniqueName('wf')),
      args: [{ activity, args: [arg], maximumAttempts: options.maximumAttempts ?? 3 }],
    });
  return temporal.withWorker({ taskQueue, activities, interceptors: { activity: interceptors } }, () => fn(run));
}
type Run = (activity: keyof typeof activities, arg: unknown, options?: { workflowId?: string; maximumAttempts?: number }) => Promise<unknown>;

const release01Worker = (store: InstanceType<typeof release01.PostgresClaimStore>) =>
  release01.idempotencyInterceptors({ store, audit: true, leaseMs: 5_000 });
const currentWorker = (store: PostgresClaimStore) => idempotencyInterceptors({ store, audit: true });

async function claimRows(schema: string) {
  const { rows } = await pool.query<{ key: string; state: string; activity_type: string; worker_schema: number | null }>(
    `SELECT key, state, activity_type, worker_schema FROM "${schema}".claims ORDER BY claimed_at`,
  );
  return rows;
}

async function migrationIds(schema: string): Promise<number[]> {
  const { rows } = await pool.query<{ id: number }>(`SELECT id FROM "${schema}".migrations ORDER BY id`);
  return rows.map((row) => row.id);
}

/** The SQLSTATE a promise rejects with. */
async function sqlStateOf(promise: Promise<unknown>): Promise<string | undefined> {
  const error = await promise.then(
    () => expect.fail('expected the statement to be refused'),
    (error: unknown) => error as { code?: string },
  );
  return error.code;
}

function claimRequest(key: string) {
  return {
    key,
    fingerprint: 'fp',
    namespace: 'default',
    activityType: 'send',
    workflowId: 'wf-direct',
    runId: 'run-direct',
    activityId: '1',
    attempt: 1,
    claimedBy: 'release-0.1-test',
  };
}

const UPGRADE = Array.from({ length: LATEST_MIGRATION - release01.RELEASE_0_1_SCHEMA }, (_, i) => release01.RELEASE_0_1_SCHEMA + 1 + i);

describe('the fixture', () => {
  it('this release’s migrations 1 to 3 are 0.1’s, unchanged (a 0.1 schema is this release’s schema at 3)', () => {
    expect(release01.LATEST_MIGRATION).toBe(release01.RELEASE_0_1_SCHEMA);
    const text = (migrations: readonly { id: number; name: string; sql: (s: string) => string }[]) =>
      migrations.slice(0, 3).map(({ id, name, sql }) => ({ id, name, sql: sql('"s"') }));
    expect(text(MIGRATIONS)).toEqual(text(release01.MIGRATIONS));
  });

  const history = (() => {
    try {
      execFileSync('git', ['cat-file', '-e', `${release01.RELEASE_0_1_COMMIT}^{commit}`], { cwd: ROOT, stdio: 'ignore' });
      return true;
    } catch {
      return false; // a shallow clone: the copy is what is tested
    }
  })();
  it.runIf(history)('is 0.1’s src, byte for byte (where git history has the commit)', async () => {
    const listed = execFileSync('git', ['ls-tree', '-r', '--name-only', release01.RELEASE_0_1_COMMIT, 'src'], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter((path) => path && !path.startsWith('src/cli/'));
    expect(listed.length).toBeGreaterThan(30);
    expect(listed).toContain('src/workflow/resumable.ts');
    for (const path of listed) {
      const original = execFileSync('git', ['show', `${release01.RELEASE_0_1_COMMIT}:${path}`], { cwd: ROOT });
      expect((await readFile(`${FIXTURE}${path}`)).equals(original), path).toBe(true);
    }
  });
});

describe('a 0.1 worker on a schema this release migrated', () => {
  it('started after the migration, its first claim is refused by its own schema check (SchemaTooNewError): every attempt fails retryably, nothing is called, no claim is written; its migrate() changes nothing', async () => {
    const schema = await release01Schema();
    expect((await migrate(pool, { schema })).applied).toEqual(UPGRADE);

    const refusal = await release01.migrate(pool, { schema }).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(release01.SchemaTooNewError);
    expect(refusal).toMatchObject({ databaseVersion: LATEST_MIGRATION });
    expect(await migrationIds(schema)).toEqual([1, 2, 3, ...UPGRADE]);

    const store = new release01.PostgresClaimStore({ pool, schema });
    const direct = await store.begin(claimRequest('direct'), 5_000).catch((error: unknown) => error);
    expect(direct).toBeInstanceOf(release01.SchemaTooNewError);

    called = [];
    const failure = await withWorker(release01Worker(store), (run) => activityFailureOf(run('send', uniqueName('+49'), { maximumAttempts: 3 })));
    expect(failure.type).toBe(IdempotencyStoreUnavailable);
    expect(failure.nonRetryable).toBeFalsy();
    expect(failure.message).toMatch(/^Did not run send \(attempt 3\): .*SchemaTooNewError.*newer than this temporal-idempotency knows \(3\).*Nothing was called; Temporal will retry\.$/s);
    expect(called).toEqual([]);
    expect(await claimRows(schema)).toEqual([]);
  });

  it('running when the migration committed: its call in flight records its result, its next claims (new or repeated) are refused by the database (TI002) with nothing called and no row left, and an upgraded worker takes them', async () => {
    const schema = await release01Schema();
    const store01 = new release01.PostgresClaimStore({ pool, schema });
    const [first, inFlight, next] = [uniqueName('first'), uniqueName('in-flight'), uniqueName('next')];
    called = [];

    await withWorker(release01Worker(store01), async (run) => {
      expect(await run('send', first)).toEqual([`sent to ${first}`]);
      const holding = run('held', inFlight);
      void holding.catch(() => undefined);
      // Wait until the activity is inside its call, its claim committed.
      for (let waited = 0; !called.includes(`held:${inFlight}`); waited += 50) {
        if (waited > 30_000) expect.fail('the held activity never started');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }

      // The deploy step, while this 0.1 worker runs and has a call in flight.
      expect((await migrate(pool, { schema })).applied).toEqual(UPGRADE);

      // The call in flight finishes: 0.1 records its outcome on the migrated schema.
      releaseHeld();
      expect(await holding).toEqual([`sent to ${inFlight}`]);

      // Its next claim: refused by the database, for a new action and a repeat alike.
      const directKey = uniqueName('direct');
      expect(await sqlStateOf(store01.begin(claimRequest(directKey), 5_000))).toBe('TI002');
      for (const to of [next, first]) {
        const failure = await activityFailureOf(run('send', to, { maximumAttempts: 2 }));
        expect(failure.type).toBe(IdempotencyStoreUnavailable);
        expect(failure.nonRetryable).toBeFalsy();
        expect(failure.message).toMatch(/^Did not run send \(attempt 2\): .*may not claim here: this schema needs workers that know version \d+ or later.*Nothing was called/s);
      }
    });
    expect(called).toEqual([`send:${first}`, `held:${inFlight}`]);
    expect(await claimRows(schema)).toEqual([
      { key: expect.any(String), state: 'completed', activity_type: 'send', worker_schema: null },
      { key: expect.any(String), state: 'completed', activity_type: 'held', worker_schema: null },
    ]);

    // The upgraded worker: the refused action runs once, 0.1's records answer their repeats.
    called = [];
    await withWorker(currentWorker(currentStore(schema)), async (run) => {
      expect(await run('send', next)).toEqual([`sent to ${next}`]);
      expect(await run('send', first)).toEqual([`sent to ${first}`]);
      expect(await run('held', inFlight)).toEqual([`sent to ${inFlight}`]);
    });
    expect(called).toEqual([`send:${next}`]);
  });
});

describe('this release’s migrate() on a 0.1 schema', () => {
  it('keeps 0.1’s claims and outcomes: a completed 0.1 call is answered from its record (same workflow, default scope), an unknown one is refused, and the CLI shows both', async () => {
    const schema = await release01Schema();
    const store01 = new release01.PostgresClaimStore({ pool, schema });
    const order = { orderId: uniqueName('order'), amountCents: 4_999 };
    const receipt = { id: `ch_${order.orderId}`, amountCents: 4_999 };
    const [chargeWorkflow, callWorkflow, to] = [uniqueName('wf-charge'), uniqueName('wf-call'), uniqueName('+49')];
    called = [];

    await withWorker(release01Worker(store01), async (run) => {
      expect(await run('charge', order, { workflowId: chargeWorkflow })).toEqual([receipt]);
      const refused = await activityFailureOf(run('ambiguous', to, { workflowId: callWorkflow }));
      expect(refused).toMatchObject({ type: IdempotencyOrphanedClaim, nonRetryable: true });
    });
    expect(called).toEqual([`charge:${order.orderId}`, `ambiguous:${to}`]);
    const before = await pool.query(`SELECT * FROM "${schema}".claims ORDER BY claimed_at`);
    const ledgerBefore = await pool.query(`SELECT call_id, event, key, outcome FROM "${schema}".ledger ORDER BY id`);
    expect(before.rows.map((row) => row.state)).toEqual(['completed', 'unknown']);
    const [completedKey, unknownKey] = before.rows.map((row) => row.key as string);

    expect(await migrate(pool, { schema })).toMatchObject({ applied: UPGRADE, version: LATEST_MIGRATION });

    // Every 0.1 column of every row, as 0.1 wrote it.
    const after = await pool.query(`SELECT * FROM "${schema}".claims ORDER BY claimed_at`);
    expect(after.rows.map((row) => Object.fromEntries(Object.keys(before.rows[0]).map((column) => [column, row[column]])))).toEqual(before.rows);
    expect((await pool.query(`SELECT call_id, event, key, outcome FROM "${schema}".ledger ORDER BY id`)).rows).toEqual(ledgerBefore.rows);

    // This release's CLI reads them.
    const shown = await runCli(['show', completedKey!, '--schema', schema, '--json']);
    expect({ code: shown.code, stderr: shown.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(shown.stdout)).toMatchObject({ key: completedKey, state: 'completed', activity_type: 'charge', result: receipt });
    const open = await runCli(['list', '--state', 'open', '--schema', schema, '--json']);
    expect({ code: open.code, stderr: open.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(open.stdout)).toEqual([expect.objectContaining({ key: unknownKey, state: 'unknown', activity_type: 'ambiguous' })]);
    const ledger = await runCli(['ledger', '--key', completedKey!, '--schema', schema, '--json']);
    expect({ code: ledger.code, stderr: ledger.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(ledger.stdout)).toEqual([expect.objectContaining({ key: completedKey, activity_type: 'charge', outcome: 'completed' })]);

    // This release's worker, the same workflows run again: nothing is called twice.
    called = [];
    await withWorker(currentWorker(currentStore(schema)), async (run) => {
      expect(await run('charge', order, { workflowId: chargeWorkflow })).toEqual([receipt]);
      const refused = await activityFailureOf(run('ambiguous', to, { workflowId: callWorkflow }));
      expect(refused).toMatchObject({ type: IdempotencyOrphanedClaim, nonRetryable: true });
      expect(refused.details?.[0]).toMatchObject({ key: unknownKey });
    });
    expect(called).toEqual([]);
    expect((await claimRows(schema)).map(({ key, state }) => ({ key, state }))).toEqual([
      { key: completedKey, state: 'completed' },
      { key: unknownKey, state: 'unknown' },
    ]);
  });
});
