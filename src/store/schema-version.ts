/**
 * Which migration a schema is at, whether this release's workers may work on
 * it, and the errors that name the fix when they may not.
 */
import type pg from 'pg';
import { quoteIdentifier } from './identifiers.js';
import { IdempotencyError } from '../errors.js';
import { LATEST_MIGRATION, MIGRATIONS } from './migrations/index.js';

const UNDEFINED_TABLE = '42P01';

/** Raised when the schema has not been migrated, so the fix is named instead of `relation does not exist`. */
export class SchemaNotMigratedError extends IdempotencyError {
  override readonly name = 'SchemaNotMigratedError';
  readonly code = 'schema-not-migrated';
  constructor(
    readonly schema: string,
    readonly databaseVersion: number,
    /** What is missing, when the version is current but the schema is not whole. */
    missing?: string,
  ) {
    super(
      missing
        ? `Schema "${schema}" is at migration ${databaseVersion}, but ${missing}: a schema's owner changed it by hand. ` +
            'Claims need a whole schema: create a new one with migrate() (its claims start empty).'
        : `Schema "${schema}" is at migration ${databaseVersion} of ${LATEST_MIGRATION}: run migrate() ` +
            `or \`temporal-idempotency migrate --schema ${schema}\` before starting workers.`,
    );
  }
}

/** Raised when a newer release migrated the schema in a way this release's workers cannot keep up with. */
export class SchemaTooNewError extends IdempotencyError {
  override readonly name = 'SchemaTooNewError';
  readonly code = 'schema-too-new';
  constructor(
    readonly schema: string,
    readonly databaseVersion: number,
    /** The oldest schema version a worker must know to claim on it. */
    readonly oldestWorkerSchema: number = databaseVersion,
  ) {
    super(
      `Schema "${schema}" is at migration ${databaseVersion}, newer than this temporal-idempotency knows ` +
        `(${LATEST_MIGRATION}), and needs workers that know migration ${oldestWorkerSchema} or later: a newer ` +
        `release migrated it. Upgrade temporal-idempotency on this worker.`,
    );
  }
}

/** Raised for a schema a release before 1.0 made: 1.0 starts from a new baseline migration and does not upgrade it. */
export class SchemaBeforeBaselineError extends IdempotencyError {
  override readonly name = 'SchemaBeforeBaselineError';
  readonly code = 'schema-before-baseline';
  constructor(
    readonly schema: string,
    /** What that release called its first migration. */
    readonly firstMigration: string,
  ) {
    super(
      `Schema "${schema}" was made by a release before 1.0 (its first migration is "${firstMigration}"): 1.0 starts from a ` +
        'new baseline and does not upgrade it. Migrate a new schema (`temporal-idempotency migrate --schema <new>`) and ' +
        'point the workers and the CLI at it. Its claims are not carried over: a retry or reset of a call recorded only ' +
        'there would run again, so keep it until none can come, and resolve such calls by hand.',
    );
  }
}

export interface SchemaState {
  /** The latest migration applied; 0 when the schema or its migrations table does not exist. */
  readonly version: number;
  /** The oldest schema version whose workers may claim here. */
  readonly oldestWorkerSchema: number;
}

/** Reads the schema's state without changing anything (so a role without DDL rights can run it). */
export async function readSchemaState(client: pg.ClientBase | pg.Pool, quotedSchema: string): Promise<SchemaState> {
  let version: number;
  try {
    const { rows } = await client.query<{ version: number | null }>(`SELECT max(id) AS version FROM ${quotedSchema}.migrations`);
    version = rows[0]?.version ?? 0;
  } catch (error) {
    if ((error as { code?: string }).code === UNDEFINED_TABLE) return { version: 0, oldestWorkerSchema: 0 };
    throw error;
  }
  if (version === 0) return { version, oldestWorkerSchema: 0 };
  const { rows: first } = await client.query<{ name: string }>(`SELECT name FROM ${quotedSchema}.migrations WHERE id = 1`);
  const firstMigration = first[0]?.name ?? '(none)';
  if (firstMigration !== MIGRATIONS[0]!.name) throw new SchemaBeforeBaselineError(unquoted(quotedSchema), firstMigration);
  const { rows } = await client.query<{ oldest_worker_schema: number }>(`SELECT oldest_worker_schema FROM ${quotedSchema}.settings`);
  return { version, oldestWorkerSchema: rows[0]?.oldest_worker_schema ?? version };
}

/**
 * Whether this release's workers may work on a schema in `state`: at its own migration, or at a
 * newer one whose migrations all keep this release's workers working.
 */
export function usableBy(state: SchemaState, knownLatest: number = LATEST_MIGRATION): boolean {
  return state.version === knownLatest || (state.version > knownLatest && state.oldestWorkerSchema <= knownLatest);
}

/** Throws SchemaNotMigratedError or SchemaTooNewError unless this release's workers may work on `schema`. */
export async function assertSchemaUsable(pool: pg.Pool, schema: string): Promise<SchemaState> {
  const state = await readSchemaState(pool, quoteIdentifier('schema', schema));
  if (state.version < LATEST_MIGRATION) throw new SchemaNotMigratedError(schema, state.version);
  if (!usableBy(state)) throw new SchemaTooNewError(schema, state.version, state.oldestWorkerSchema);
  return state;
}

function unquoted(quotedSchema: string): string {
  return quotedSchema.slice(1, -1).replaceAll('""', '"');
}
