/**
 * The ordered list of schema migrations. Each one runs once, in its own
 * transaction, and is recorded in `<schema>.migrations`.
 */
import baseline from './000001-baseline.js';

export interface Migration {
  readonly id: number;
  readonly name: string;
  /** SQL text for the already-quoted schema name. */
  readonly sql: (quotedSchema: string) => string;
  /**
   * The oldest schema version whose workers keep working once this migration is applied: a
   * release's workers know the migrations up to its own latest, and each store checks this once,
   * before its first claim. Omitted: this migration's own id, so only workers that know it may
   * claim. Declare an earlier version only for an additive change that older workers' statements
   * and reads are unaffected by (a nullable column they do not write, an index, a new table they do
   * not use), and say so in the migration's comment. A migration that leaves workers behind is
   * applied with them stopped: one running already checked, and keeps claiming.
   */
  readonly workersFrom?: number;
}

export const MIGRATIONS: readonly Migration[] = [{ id: 1, name: 'baseline', sql: baseline }];

export const LATEST_MIGRATION = MIGRATIONS.length;
