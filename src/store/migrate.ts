/**
 * Applies the schema migrations. Safe to call from many workers at once: each
 * migration runs in its own transaction behind an advisory lock, so a
 * concurrent migrator waits, then finds the work done.
 */
import type pg from 'pg';
import { DEFAULT_SCHEMA, quoteIdentifier } from './identifiers.js';
import { LATEST_MIGRATION, MIGRATIONS } from './migrations/index.js';
import type { Migration } from './migrations/index.js';
import { SchemaTooNewError, readVersion } from './schema-version.js';
import { inTransaction } from './transaction.js';

/** Arbitrary constant that namespaces our advisory locks away from the application's own. */
const ADVISORY_LOCK_CLASS = 0x7e3d1d;

export interface MigrateOptions {
  /** Postgres schema holding the tables; created when missing. Default `temporal_idempotency`. */
  readonly schema?: string;
}

export interface MigrateReport {
  readonly schema: string;
  /** Ids of the migrations this call applied; empty when the schema was already current. */
  readonly applied: readonly number[];
  readonly latest: number;
}

export async function migrate(pool: pg.Pool, options: MigrateOptions = {}): Promise<MigrateReport> {
  const schema = options.schema ?? DEFAULT_SCHEMA;
  const quotedSchema = quoteIdentifier('schema', schema);
  const applied: number[] = [];
  for (const migration of MIGRATIONS) {
    if (await applyIfPending(pool, schema, quotedSchema, migration)) applied.push(migration.id);
  }
  return { schema, applied, latest: LATEST_MIGRATION };
}

async function applyIfPending(pool: pg.Pool, schema: string, quotedSchema: string, migration: Migration): Promise<boolean> {
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
    const databaseVersion = await readVersion(client, quotedSchema);
    if (databaseVersion > LATEST_MIGRATION) throw new SchemaTooNewError(schema, databaseVersion);
    if (databaseVersion >= migration.id) return false;
    await client.query(migration.sql(quotedSchema));
    await client.query(`INSERT INTO ${quotedSchema}.migrations (id, name) VALUES ($1, $2)`, [migration.id, migration.name]);
    return true;
  });
}
