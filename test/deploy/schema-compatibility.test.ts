/**
 * Mixed versions during a rollout: this release's workers on a schema that
 * the next release migrated. An additive migration that declares it keeps
 * older workers working leaves them working (claims, repeats, the CLI); one
 * that does not stops a worker that starts after it cleanly, before any call:
 * each store checks the schema once, before its first claim.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { IdempotencyStoreUnavailable, PostgresClaimStore, SchemaBeforeBaselineError, SchemaTooNewError, idempotencyInterceptors, migrate } from '../../src/index.js';
import { applyMigrations } from '../../src/store/migrate.js';
import { LATEST_MIGRATION, MIGRATIONS } from '../../src/store/migrations/index.js';
import type { Migration } from '../../src/store/migrations/index.js';
import { activityFailureOf } from '../support/failures.js';
import { runCli } from '../support/cli.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

const temporal = useTemporal();
const pool = new pg.Pool({ connectionString: inject('databaseUrl'), max: 10 });
pool.on('error', () => undefined);
const schemas: string[] = [];
afterAll(async () => {
  for (const name of schemas) await pool.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
  await pool.end();
});

/** The next release's migrations: an additive one that keeps this release's workers, or one that does not. */
const nextRelease = {
  additive: {
    id: LATEST_MIGRATION + 1,
    name: 'next-release-additive',
    workersFrom: LATEST_MIGRATION,
    sql: (s) => `
ALTER TABLE ${s}.claims ADD COLUMN next_release_note text;
CREATE INDEX claims_next_release_note_idx ON ${s}.claims (next_release_note);
CREATE TABLE ${s}.next_release_things (id integer PRIMARY KEY);`,
  },
  breaking: {
    id: LATEST_MIGRATION + 1,
    name: 'next-release-breaking',
    sql: (s) => `ALTER TABLE ${s}.claims ADD COLUMN next_release_required text`,
  },
} satisfies Record<string, Migration>;

async function freshSchema(migrations: readonly Migration[] = MIGRATIONS): Promise<string> {
  const name = `t_compat_${randomBytes(3).toString('hex')}`;
  schemas.push(name);
  await applyMigrations(pool, name, migrations);
  return name;
}

let sent: string[] = [];
/** Runs `send(to)` through this release's interceptor on `store`; keyed by `to`, so a repeat is the same action. */
function send(store: PostgresClaimStore, to: string): Promise<unknown> {
  const taskQueue = uniqueName('tq');
  return temporal.withWorker(
    {
      taskQueue,
      activities: { send: async (target: string) => (sent.push(target), `sent to ${target}`) },
      interceptors: { activity: idempotencyInterceptors({ store, activities: { send: { key: ({ args }) => String(args[0]) } } }) },
    },
    () => temporal.client.workflow.execute('callActivity', { taskQueue, workflowId: uniqueName('wf'), args: [{ activity: 'send', args: [to], maximumAttempts: 2 }] }),
  );
}

describe('this release on the next release’s schema', () => {
  it('after an additive migration that keeps it: migrate() changes nothing, claims and repeats work, and so does the CLI', async () => {
    const schema = await freshSchema([...MIGRATIONS, nextRelease.additive]);
    expect(await migrate(pool, { schema })).toMatchObject({ applied: [], latest: LATEST_MIGRATION, version: LATEST_MIGRATION + 1 });
    const store = new PostgresClaimStore({ pool, schema });
    sent = [];
    const to = uniqueName('+49');
    expect(await send(store, to)).toEqual([`sent to ${to}`]);
    expect(await send(store, to)).toEqual([`sent to ${to}`]);
    expect(sent).toEqual([to]);
    const { rows } = await pool.query(`SELECT key FROM "${schema}".claims`);
    expect(rows).toEqual([{ key: expect.any(String) }]);

    const shown = await runCli(['show', rows[0].key, '--schema', schema, '--json']);
    expect({ code: shown.code, stderr: shown.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(shown.stdout)).toMatchObject({ state: 'completed', result: `sent to ${to}` });
  });

  it('after a migration that leaves it behind: a worker that starts stops before any call, and says why', async () => {
    const schema = await freshSchema();
    await applyMigrations(pool, schema, [...MIGRATIONS, nextRelease.breaking]);
    const starting = new PostgresClaimStore({ pool, schema });
    sent = [];
    const failure = await activityFailureOf(send(starting, uniqueName('+49')));
    expect(failure.type).toBe(IdempotencyStoreUnavailable);
    expect(failure.nonRetryable).toBeFalsy();
    expect(failure.message).toMatch(
      new RegExp(`migration ${LATEST_MIGRATION + 1}, newer than .* needs workers that know migration ${LATEST_MIGRATION + 1} or later`),
    );
    expect(sent).toEqual([]);
    await expect(migrate(pool, { schema })).rejects.toThrow(SchemaTooNewError);
  });

  it('a schema a release before 1.0 made is refused by name, by migrate(), the CLI and a worker, and left as it is', async () => {
    // What 0.1.0's migrate() made: its migrations 1 to 3.
    const name = `t_compat_v01_${randomBytes(3).toString('hex')}`;
    schemas.push(name);
    const s = `"${name}"`;
    await pool.query(`
CREATE SCHEMA ${s};
CREATE TABLE ${s}.migrations (id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE ${s}.claims (key text PRIMARY KEY, state text NOT NULL, token uuid NOT NULL, fingerprint text NOT NULL,
  namespace text NOT NULL, activity_type text NOT NULL, workflow_id text, run_id text, activity_id text NOT NULL,
  attempt integer NOT NULL, claimed_by text NOT NULL, claimed_at timestamptz NOT NULL DEFAULT now(), finished_at timestamptz,
  result_payload jsonb, outcome_note text, lease_expires_at timestamptz, awaited boolean NOT NULL DEFAULT false);
INSERT INTO ${s}.migrations (id, name) VALUES (1, 'claims'), (2, 'leases'), (3, 'ledger');`);
    await expect(migrate(pool, { schema: name })).rejects.toThrow(SchemaBeforeBaselineError);
    await expect(migrate(pool, { schema: name })).rejects.toThrow(/made by a release before 1\.0 \(its first migration is "claims"\).*Migrate a new schema/);
    const cli = await runCli(['migrate', '--schema', name]);
    expect(cli.code).toBe(5);
    expect(cli.stderr).toMatch(/release before 1\.0.*claims are not carried over/);
    const store = new PostgresClaimStore({ pool, schema: name });
    sent = [];
    const failure = await activityFailureOf(send(store, uniqueName('+49')));
    expect(failure.type).toBe(IdempotencyStoreUnavailable);
    expect(sent).toEqual([]);
    const { rows } = await pool.query(`SELECT id FROM ${s}.migrations ORDER BY id`);
    expect(rows).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }]);
  });
});
