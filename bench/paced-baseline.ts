/**
 * What the interceptor's Postgres work costs at best, at one activity in flight:
 * the store's own claim (durable) and record (asynchronous commit) statements,
 * sent straight through a `pg.Pool`, one cycle at a time at the pace the
 * activities ran, so Postgres and Node are as warm (or as cold) as they were
 * for the activities. Its p50 is the floor the added p50 is held to.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import { baselineCycle } from './baseline-cycle.js';
import { benchPool } from './pool.js';
import { withFreshSchema } from './schema.js';
import { percentile } from './stats.js';

export interface PacedBaseline {
  readonly cycles: number;
  readonly intervalMs: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

export async function pacedBaseline(connectionString: string, cycles: number, intervalMs: number): Promise<PacedBaseline> {
  return withFreshSchema(connectionString, 'paced', async (schema) => {
    const pool = benchPool(connectionString, 2);
    try {
      const cycle = baselineCycle(pool, schema);
      for (let warmup = 0; warmup < 20; warmup++) await cycle();
      const samples: number[] = [];
      for (let next = performance.now(); samples.length < cycles; next += intervalMs) {
        await sleep(Math.max(0, next - performance.now()));
        const started = performance.now();
        await cycle();
        samples.push(performance.now() - started);
      }
      return { cycles, intervalMs, p50Ms: percentile(samples, 50), p99Ms: percentile(samples, 99) };
    } finally {
      await pool.end();
    }
  });
}
