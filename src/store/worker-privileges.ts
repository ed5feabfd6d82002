/**
 * Whether the role a store connects as may settle what it claims. A role that
 * may insert a claim but not record its outcome would make the call and leave
 * the claim without one, to be refused on every retry and reset: checked
 * before the first claim, so such a worker claims nothing and says what is missing.
 */
import type pg from 'pg';
import { IdempotencyError } from '../errors.js';

/** Raised before any claim when the store's role lacks a privilege a worker needs (see requiredPrivileges). */
export class StorePrivilegesMissingError extends IdempotencyError {
  override readonly name = 'StorePrivilegesMissingError';
  readonly code = 'store-privileges-missing';
  constructor(
    readonly schema: string,
    readonly missing: readonly string[],
  ) {
    // The role's name stays out: this text reaches workflow history.
    super(
      `The database role this worker connects as lacks ${missing.join(', ')} in schema "${schema}", which it needs ` +
        'to record what it claims and who waits on it: nothing was claimed. As the migrator, run ' +
        '`temporal-idempotency migrate --worker-role <role>`, or the statements `temporal-idempotency grants ' +
        '--worker-role <role>` prints.',
    );
  }
}

interface RequiredPrivilege {
  readonly label: string;
  /** The check's function, and its two arguments: the table's name and the privilege. */
  readonly check: 'has_any_column_privilege' | 'has_table_privilege';
  readonly object: string;
  readonly privilege: string;
}

/** What a worker does in the schema, each with its check (a column grant counts as the table's: a DBA may grant exactly the columns written). */
function requiredPrivileges(quotedSchema: string): RequiredPrivilege[] {
  const onTable = (table: string, privileges: readonly string[]): RequiredPrivilege[] =>
    privileges.map((privilege) => ({
      label: `${privilege} on ${table}`,
      check: privilege === 'DELETE' ? 'has_table_privilege' : 'has_any_column_privilege',
      object: `${quotedSchema}.${table}`,
      privilege,
    }));
  return [
    // Claims, records, releases and renewals.
    ...onTable('claims', ['SELECT', 'INSERT', 'UPDATE', 'DELETE']),
    // A refused workflow on record as waiting, for resolve and release to signal: without it, it waits for ever.
    ...onTable('waiters', ['SELECT', 'INSERT', 'UPDATE']),
    // The key salt, read once: without it no key can be derived.
    ...onTable('settings', ['SELECT']),
  ];
}

/** Throws StorePrivilegesMissingError unless the connected role may do in `quotedSchema` all a worker does there. */
export async function assertWorkerPrivileges(pool: pg.Pool, schema: string, quotedSchema: string): Promise<void> {
  const required = requiredPrivileges(quotedSchema);
  const checks = required.map(({ check }, index) => `${check}($${2 * index + 1}, $${2 * index + 2}) AS p${index}`);
  const { rows } = await pool.query<Record<string, boolean>>(
    `SELECT ${checks.join(', ')}`,
    required.flatMap(({ object, privilege }) => [object, privilege]),
  );
  const granted = rows[0] ?? {};
  const missing = required.filter((_, index) => granted[`p${index}`] !== true).map(({ label }) => label);
  if (missing.length > 0) throw new StorePrivilegesMissingError(schema, missing);
}
