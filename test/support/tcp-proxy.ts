/** The Postgres proxy the tests cut, reset or stall: it lives in dev/, beside the chaos runs that use it too. */
import pg from 'pg';
import { inject } from 'vitest';
import { TcpProxy } from '../../dev/tcp-proxy.js';

export { TcpProxy };

/**
 * A proxy in front of the suite's Postgres and a pool that reaches it only through that proxy, so a
 * test can cut, reset or stall every connection of the pool; `cleanups` (run after the file) stops both.
 */
export async function poolThroughProxy(cleanups: Array<() => Promise<unknown>>, max: number): Promise<{ proxy: TcpProxy; pool: pg.Pool }> {
  const databaseUrl = new URL(inject('databaseUrl'));
  const proxy = new TcpProxy(databaseUrl.hostname, Number(databaseUrl.port));
  const url = new URL(databaseUrl);
  url.port = String(await proxy.start());
  cleanups.push(() => proxy.stop());
  const pool = new pg.Pool({ connectionString: url.toString(), max, connectionTimeoutMillis: 2_000 });
  pool.on('error', () => undefined); // the cuts are the test's own doing
  cleanups.push(() => pool.end().catch(() => undefined));
  return { proxy, pool };
}
