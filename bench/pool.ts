/** Pools for the benchmark, each with an error listener: an idle client losing its server must not crash the run. */
import pg from 'pg';

export function benchPool(connectionString: string, max: number): pg.Pool {
  const pool = new pg.Pool({ connectionString, max, connectionTimeoutMillis: 5_000 });
  pool.on('error', (error) => console.error(`[bench] idle Postgres client failed: ${error.message}`));
  return pool;
}
