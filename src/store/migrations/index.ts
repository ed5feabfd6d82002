/**
 * The ordered list of schema migrations. Each one runs once, in its own
 * transaction, and is recorded in `<schema>.migrations`.
 */
import claims from './000001-claims.js';
import leases from './000002-leases.js';
import ledger from './000003-ledger.js';
import deadlinesAndWaiters from './000004-deadlines-and-waiters.js';
import trust from './000005-trust.js';
import reconciliation from './000006-reconciliation.js';
import keyFormatInForce from './000007-key-format-in-force.js';
import callArguments from './000008-call-arguments.js';
import ledgerRetention from './000009-ledger-retention.js';
import workerRegistry from './000010-worker-registry.js';
import settlingSigner from './000011-settling-signer.js';

export interface Migration {
  readonly id: number;
  readonly name: string;
  /** SQL text for the already-quoted schema name. */
  readonly sql: (quotedSchema: string) => string;
  /**
   * The oldest schema version whose workers keep working once this migration is applied: a
   * release's workers know the migrations up to its own latest. Omitted: this migration's own id,
   * so only workers that know it may claim. Declare an earlier version only for an additive change
   * that older workers' statements and reads are unaffected by (a nullable column they do not
   * write, an index, a new table they do not use), and say so in the migration's comment.
   * Only from migration 7 on, which introduced the check.
   */
  readonly workersFrom?: number;
}

export const MIGRATIONS: readonly Migration[] = [
  { id: 1, name: 'claims', sql: claims },
  { id: 2, name: 'leases', sql: leases },
  { id: 3, name: 'ledger', sql: ledger },
  { id: 4, name: 'deadlines-and-waiters', sql: deadlinesAndWaiters },
  { id: 5, name: 'trust', sql: trust },
  { id: 6, name: 'reconciliation', sql: reconciliation },
  { id: 7, name: 'key-format-in-force', sql: keyFormatInForce },
  { id: 8, name: 'call-arguments', sql: callArguments, workersFrom: 7 },
  { id: 9, name: 'ledger-retention', sql: ledgerRetention, workersFrom: 7 },
  { id: 10, name: 'worker-registry', sql: workerRegistry, workersFrom: 7 },
  { id: 11, name: 'settling-signer', sql: settlingSigner, workersFrom: 7 },
];

/** The migration that made every claim say which schema version its worker knows. */
export const WORKER_COMPATIBILITY_MIGRATION = 7;

export const LATEST_MIGRATION = MIGRATIONS.length;
