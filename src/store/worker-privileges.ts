/**
 * Whether the role a store connects as may settle what it claims. A role that
 * may insert a claim but not record its outcome would make the call and leave
 * the claim without one, to be refused on every retry and reset: checked
 * before the first claim, so such a worker claims nothing and says what is missing.
 */
import type pg from 'pg';
import { IdempotencyError } from '../errors.js';

/** Raised before any claim when the store's role lacks a privilege it needs to claim, record, release or renew. */
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
        'to record the outcome of what it claims: nothing was claimed. As the migrator, run ' +
        '`temporal-idempotency migrate --worker-role <role>`, or the statements `temporal-idempotency grants ' +
        '--worker-role <role>` prints.',
    );
  }
}

/** Throws StorePrivilegesMissingError unless the connected role may claim, settle and release in `quotedSchema`. */
export async function assertWorkerPrivileges(pool: pg.Pool, schema: string, quotedSchema: string): Promise<void> {
  const claims = `${quotedSchema}.claims`;
  const signer = `${quotedSchema}.signed_by_retired(text)`;
  // Column grants count as the table's: a DBA may grant exactly the columns the statements write.
  const { rows } = await pool.query<Record<string, boolean>>(
    `
SELECT has_any_column_privilege($1, 'SELECT') AS "SELECT on claims",
  has_any_column_privilege($1, 'INSERT') AS "INSERT on claims",
  has_any_column_privilege($1, 'UPDATE') AS "UPDATE on claims",
  has_table_privilege($1, 'DELETE') AS "DELETE on claims",
  has_function_privilege($2, 'EXECUTE') AS "EXECUTE on signed_by_retired(text)"`,
    [claims, signer],
  );
  const missing = Object.entries(rows[0] ?? {})
    .filter(([, granted]) => !granted)
    .map(([privilege]) => privilege);
  if (missing.length > 0) throw new StorePrivilegesMissingError(schema, missing);
}
