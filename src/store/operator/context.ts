/** What the operator's reads and changes share: the pool, the statements, the signer, and the trail's writer. */
import type pg from 'pg';
import type { RecordSigner } from '../record-signing.js';
import type { StoreSql } from '../sql/index.js';
import { pgText } from '../pg-text.js';

export interface OperatorContext {
  readonly pool: pg.Pool;
  readonly schema: string;
  readonly sql: StoreSql;
  readonly signer: RecordSigner;
  /** Resolves once the schema is known usable (checked once, then remembered). */
  ready(): Promise<void>;
}

/** One entry of the operator trail, as appended. */
export interface OperatorTrailEntry {
  readonly action: string;
  readonly key: string | null;
  readonly reason: string | undefined;
  readonly forced: boolean;
  readonly before: unknown;
  readonly after: unknown;
}

/**
 * Appends `entry` to the operator trail in the change's own transaction (`client`): every change an
 * operator makes (to a claim, by a prune, by a re-sign) says who, when, why, and from what to what.
 */
export async function recordOperatorAction(context: OperatorContext, client: pg.PoolClient, entry: OperatorTrailEntry): Promise<void> {
  const reason = entry.reason === undefined ? null : pgText(entry.reason);
  await client.query(context.sql.trail.append, [entry.action, entry.key, reason, entry.forced, entry.before, entry.after]);
}
