/**
 * The ordered list of schema migrations. Each one runs once, in its own
 * transaction, and is recorded in `<schema>.migrations`.
 */
import claims from './000001-claims.js';
import leases from './000002-leases.js';
import ledger from './000003-ledger.js';
import deadlinesAndWaiters from './000004-deadlines-and-waiters.js';
import trust from './000005-trust.js';

export interface Migration {
  readonly id: number;
  readonly name: string;
  /** SQL text for the already-quoted schema name. */
  readonly sql: (quotedSchema: string) => string;
}

export const MIGRATIONS: readonly Migration[] = [
  { id: 1, name: 'claims', sql: claims },
  { id: 2, name: 'leases', sql: leases },
  { id: 3, name: 'ledger', sql: ledger },
  { id: 4, name: 'deadlines-and-waiters', sql: deadlinesAndWaiters },
  { id: 5, name: 'trust', sql: trust },
];

export const LATEST_MIGRATION = MIGRATIONS.length;
