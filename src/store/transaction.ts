import type pg from 'pg';

/**
 * Runs `work` in a transaction on one pooled connection: committed if it returns, rolled back if it throws.
 *
 * READ COMMITTED whatever the role's or database's default: every transaction here takes a lock and then
 * reads what it must act on (a migration, an operator's change). Under REPEATABLE READ the statement that
 * takes the lock would fix the snapshot before the lock is granted, and what committed while it waited
 * (a worker's record of the claim being resolved) would go unseen, or fail the change.
 */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL READ COMMITTED');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
