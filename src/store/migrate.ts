/**
 * Applies the schema migrations: a deploy step (`temporal-idempotency migrate`),
 * or from workers at start. It reads the schema's version first and changes
 * nothing when it is current (or newer, and still usable by this release), so
 * a worker role without DDL rights can call it. Safe to run from many places
 * at once: each migration runs in its own transaction behind an advisory lock,
 * so a concurrent migrator waits, then finds the work done.
 */
import type pg from 'pg';
import { DEFAULT_SCHEMA, quoteIdentifier } from './identifiers.js';
import { MIGRATIONS } from './migrations/index.js';
import type { Migration } from './migrations/index.js';
import { SchemaTooNewError, readSchemaState, usableBy } from './schema-version.js';
import type { SchemaState } from './schema-version.js';
import { inTransaction } from './transaction.js';
import { grantStatements } from './roles.js';
import type { StoreRoles } from './roles.js';

/** Arbitrary constant that namespaces our advisory locks away from the application's own. */
const ADVISORY_LOCK_CLASS = 0x7e3d1d;

export interface MigrateOptions {
  /** Postgres schema holding the tables; created when missing. Default `temporal_idempotency`. */
  readonly schema?: string;
  /**
   * Roles to grant what they need on the schema, after migrating (see roles.ts and SECURITY.md):
   * give them on every deploy, so tables a later migration adds are granted too. Needs a role
   * that owns the schema (the migrator).
   */
  readonly grantTo?: StoreRoles;
}

export interface MigrateReport {
  readonly schema: string;
  /** Ids of the migrations this call applied; empty when the schema was already current. */
  readonly applied: readonly number[];
  /** The latest migration this release knows. */
  readonly latest: number;
  /** The schema's migration afterwards: above `latest` when a newer release migrated it (and it stays usable). */
  readonly version: number;
}

export async function migrate(pool: pg.Pool, options: MigrateOptions = {}): Promise<MigrateReport> {
  const schema = options.schema ?? DEFAULT_SCHEMA;
  const grants = grantStatements(options.grantTo ?? {}, schema); // names checked before anything changes
  const report = await applyMigrations(pool, schema, MIGRATIONS);
  if (grants.length > 0) {
    await inTransaction(pool, async (client) => {
      for (const statement of grants) await client.query(statement);
    });
  }
  return report;
}

/** `migrate` with a given list: tests use it to play a later release's migrations. Not part of the package's API. */
export async function applyMigrations(pool: pg.Pool, schema: string, migrations: readonly Migration[]): Promise<MigrateReport> {
  const quotedSchema = quoteIdentifier('schema', schema);
  const latest = migrations.at(-1)?.id ?? 0;
  const before = await readSchemaState(pool, quotedSchema);
  if (before.version >= latest) return { schema, applied: [], latest, version: checkedUsable(schema, before, latest).version };
  const applied: number[] = [];
  let version = before.version;
  for (const migration of migrations) {
    const state = await applyIfPending(pool, schema, quotedSchema, migration, latest);
    if (state.applied) applied.push(migration.id);
    version = Math.max(version, state.version);
  }
  return { schema, applied, latest, version };
}

async function applyIfPending(
  pool: pg.Pool,
  schema: string,
  quotedSchema: string,
  migration: Migration,
  latest: number,
): Promise<{ applied: boolean; version: number }> {
  return inTransaction(pool, async (client) => {
    // Must come first, so that a concurrent migrator waits here instead of failing on a duplicate table.
    await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [ADVISORY_LOCK_CLASS, schema]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${quotedSchema}`);
    await client.query(`
CREATE TABLE IF NOT EXISTS ${quotedSchema}.migrations (
  id integer PRIMARY KEY,
  name text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
)`);
    const state = checkedUsable(schema, await readSchemaState(client, quotedSchema), latest);
    if (state.version >= migration.id) return { applied: false, version: state.version };
    await client.query(migration.sql(quotedSchema));
    await client.query(`UPDATE ${quotedSchema}.settings SET oldest_worker_schema = greatest(oldest_worker_schema, $1)`, [
      migration.workersFrom ?? migration.id,
    ]);
    await client.query(`INSERT INTO ${quotedSchema}.migrations (id, name) VALUES ($1, $2)`, [migration.id, migration.name]);
    return { applied: true, version: migration.id };
  });
}

/** A schema past `latest` is left alone when this release's workers may still work on it; otherwise it is named. */
function checkedUsable(schema: string, state: SchemaState, latest: number): SchemaState {
  if (state.version > latest && !usableBy(state, latest)) throw new SchemaTooNewError(schema, state.version, state.oldestWorkerSchema);
  return state;
}
