/**
 * Which migration a schema is at, and the errors that name the fix when it is
 * not the one this release knows.
 */
import type pg from 'pg';
import { quoteIdentifier } from './identifiers.js';
import { IdempotencyError } from '../errors.js';
import { LATEST_MIGRATION } from './migrations/index.js';

const UNDEFINED_TABLE = '42P01';

/** Raised when the schema has not been migrated, so the fix is named instead of `relation does not exist`. */
export class SchemaNotMigratedError extends IdempotencyError {
  override readonly name = 'SchemaNotMigratedError';
  readonly code = 'schema-not-migrated';
  constructor(
    readonly schema: string,
    readonly databaseVersion: number,
  ) {
    super(
      `Schema "${schema}" is at migration ${databaseVersion} of ${LATEST_MIGRATION}: run migrate() ` +
        `or \`temporal-idempotency migrate --schema ${schema}\` before starting workers.`,
    );
  }
}

export class SchemaTooNewError extends IdempotencyError {
  override readonly name = 'SchemaTooNewError';
  readonly code = 'schema-too-new';
  constructor(
    readonly schema: string,
    readonly databaseVersion: number,
  ) {
    super(
      `Schema "${schema}" is at migration ${databaseVersion}, newer than this temporal-idempotency knows ` +
        `(${LATEST_MIGRATION}): a newer release migrated it. Upgrade temporal-idempotency on this worker.`,
    );
  }
}

export async function readVersion(client: pg.ClientBase | pg.Pool, quotedSchema: string): Promise<number> {
  const { rows } = await client.query<{ version: number | null }>(
    `SELECT max(id) AS version FROM ${quotedSchema}.migrations`,
  );
  return rows[0]?.version ?? 0;
}

/** Throws SchemaNotMigratedError or SchemaTooNewError unless `schema` is at this release's migration. */
export async function assertSchemaCurrent(pool: pg.Pool, schema: string): Promise<void> {
  let version: number;
  try {
    version = await readVersion(pool, quoteIdentifier('schema', schema));
  } catch (error) {
    if ((error as { code?: string }).code === UNDEFINED_TABLE) throw new SchemaNotMigratedError(schema, 0);
    throw error;
  }
  if (version < LATEST_MIGRATION) throw new SchemaNotMigratedError(schema, version);
  if (version > LATEST_MIGRATION) throw new SchemaTooNewError(schema, version);
}
