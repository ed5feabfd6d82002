/**
 * The operator trail's writer: every change an operator makes (to a claim, by a prune, by a
 * re-sign) appends one row saying who, when, why, and from what to what, in the change's own
 * transaction.
 */
import type pg from 'pg';
import { pgText } from './pg-text.js';

export interface OperatorTrailEntry {
  readonly action: string;
  readonly key: string | null;
  readonly reason: string | undefined;
  readonly forced: boolean;
  readonly before: unknown;
  readonly after: unknown;
}

/** Appends `entry` to `operatorTrail` (the quoted, schema-qualified table) through `client`. */
export async function recordOperatorAction(client: pg.PoolClient, operatorTrail: string, entry: OperatorTrailEntry): Promise<void> {
  await client.query(
    `
INSERT INTO ${operatorTrail} (action, key, reason, forced, before_state, after_state)
VALUES ($1, $2, $3, $4, $5, $6)`,
    [entry.action, entry.key, entry.reason === undefined ? null : pgText(entry.reason), entry.forced, entry.before, entry.after],
  );
}
