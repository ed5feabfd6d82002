/**
 * The privileges each role needs on a schema, and no more. Three roles per
 * schema (see SECURITY.md): the migrator owns it and runs `migrate`; the
 * worker claims, settles and appends to the ledger; the operator (the CLI)
 * reads everything and changes claims and waiters, with a row on the operator
 * trail each time. Nobody but the migrator changes the settings (the key salt)
 * or prunes the ledger.
 *
 * `migrate` applies these after migrating when it is given the role names, on
 * every deploy, so a table a later migration adds is granted in the same step.
 */
import { DEFAULT_SCHEMA, quoteIdentifier } from './identifiers.js';

export interface StoreRoles {
  /** The role workers connect as: `PostgresClaimStore` and the audit ledger. */
  readonly worker?: string | undefined;
  /** The role the CLI connects as. */
  readonly operator?: string | undefined;
}

/** `GRANT` statements giving each named role what it needs on `schema`; none for roles not named. */
export function grantStatements(roles: StoreRoles, schema: string = DEFAULT_SCHEMA): string[] {
  const s = quoteIdentifier('schema', schema);
  const statements: string[] = [];
  if (roles.worker !== undefined) {
    const worker = quoteIdentifier('worker role', roles.worker);
    statements.push(
      `GRANT USAGE ON SCHEMA ${s} TO ${worker}`,
      // Which schema version it is at, and the key salt.
      `GRANT SELECT ON ${s}.migrations, ${s}.settings TO ${worker}`,
      // DELETE: a claim released after a definite failure.
      `GRANT SELECT, INSERT, UPDATE, DELETE ON ${s}.claims TO ${worker}`,
      // A refused workflow is recorded (INSERT … ON CONFLICT DO UPDATE), for the CLI to signal.
      `GRANT SELECT, INSERT, UPDATE ON ${s}.waiters TO ${worker}`,
      // Append only: no SELECT, so a compromised worker cannot read what other workers sent.
      `GRANT INSERT ON ${s}.ledger TO ${worker}`,
      `GRANT USAGE ON SEQUENCE ${s}.ledger_id_seq TO ${worker}`,
    );
  }
  if (roles.operator !== undefined) {
    const operator = quoteIdentifier('operator role', roles.operator);
    statements.push(
      `GRANT USAGE ON SCHEMA ${s} TO ${operator}`,
      // The key salt, read: `show` checks recorded arguments against the fingerprint.
      `GRANT SELECT ON ${s}.migrations, ${s}.settings, ${s}.ledger, ${s}.ledger_calls, ${s}.ledger_reconciliations TO ${operator}`,
      // resolve and release (after the checks the CLI makes), prune, and `keys re-sign`.
      `GRANT SELECT, UPDATE, DELETE ON ${s}.claims TO ${operator}`,
      // Marked when signalled, forgotten when the workflow is gone, pruned with their claims.
      `GRANT SELECT, UPDATE, DELETE ON ${s}.waiters TO ${operator}`,
      // The operator trail: every change the CLI makes is appended here; nobody but the owner can change it.
      `GRANT SELECT, INSERT ON ${s}.operator_actions TO ${operator}`,
      `GRANT USAGE ON SEQUENCE ${s}.operator_actions_id_seq TO ${operator}`,
    );
  }
  return statements;
}

/** The statements as a script a DBA can run by hand (`temporal-idempotency grants`). */
export function grantScript(roles: StoreRoles, schema: string = DEFAULT_SCHEMA): string {
  return grantStatements(roles, schema)
    .map((statement) => `${statement};`)
    .join('\n');
}
