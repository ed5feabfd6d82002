/**
 * One fresh schema per measurement, created by the library's own `migrate()`,
 * so no run inherits another's table bloat, and dropped afterwards.
 */
import { migrate } from '../src/index.js';
import { benchPool } from './pool.js';

let created = 0;

/** Runs `fn` with a freshly migrated schema named after `label`, then drops it. */
export async function withFreshSchema<T>(connectionString: string, label: string, fn: (schema: string) => Promise<T>): Promise<T> {
  const schema = `bench_${label}_${process.pid}_${++created}`;
  const admin = benchPool(connectionString, 1);
  try {
    await migrate(admin, { schema });
    return await fn(schema);
  } finally {
    // The name is ours and matches [a-z0-9_]; it is safe to put in SQL text.
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await admin.end();
  }
}
