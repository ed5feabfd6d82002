/**
 * Checks, once per store, whether a committed claim can still be lost. Each
 * claim forces a flushed commit for its own transaction (sql/claims.ts),
 * but no setting of ours can make an asynchronous replica hold it: promoted
 * after a failover, such a replica forgets the claim and the call runs again.
 */
import type pg from 'pg';
import type { StoreLogger } from './store-logger.js';

interface DurabilityRow {
  readonly synchronous_commit: string;
  readonly standby_names: string;
  readonly replicas: number;
}

export async function checkDurability(pool: pg.Pool, logger: StoreLogger): Promise<void> {
  const { rows } = await pool.query<DurabilityRow>(`
SELECT current_setting('synchronous_commit') AS synchronous_commit,
  current_setting('synchronous_standby_names') AS standby_names,
  (SELECT count(*) FROM pg_stat_replication)::integer AS replicas`);
  const row = rows[0];
  if (!row) return;
  if (row.replicas > 0 && row.standby_names.trim() === '') {
    logger.warn(
      `Idempotency: Postgres streams to ${row.replicas} replica(s) asynchronously (synchronous_standby_names is empty). ` +
        'A failover to a replica that had not received a claim loses it, and the call it guarded can run again. ' +
        'Configure synchronous replication, or fail over only to a replica that has caught up.',
      { replicas: row.replicas },
    );
  }
  if (row.synchronous_commit === 'off' || row.synchronous_commit === 'local') {
    logger.warn(
      `Idempotency: synchronous_commit is '${row.synchronous_commit}' for this connection; each claim sets it to 'on' ` +
        'for its own commit, so claims stay durable, but check that this is what the database intends.',
      { synchronousCommit: row.synchronous_commit },
    );
  }
}
