/**
 * Store throughput: claim-and-complete cycles per second through
 * `PostgresClaimStore`, beside the same SQL sent straight through a pool and
 * beside pgbench, at each client count. Every measurement gets its own fresh
 * schema and its own pool (as many connections as clients), and a warm-up;
 * store and baseline run `rounds` times each, and their means are compared.
 */
import type pg from 'pg';
import { baselineCycle } from './baseline-cycle.js';
import { cyclesPerSecond } from './closed-loop.js';
import type { BenchOptions } from './options.js';
import { pgbenchCyclesPerSecond, pgbenchUnavailable } from './pgbench.js';
import { benchPool } from './pool.js';
import { withFreshSchema } from './schema.js';
import { mean } from './stats.js';
import { storeCycle } from './store-cycle.js';

export interface StoreRow {
  readonly clients: number;
  readonly storePerSecond: number;
  readonly baselinePerSecond: number;
  /** Each round's figures, in run order within the round. */
  readonly storeRounds: readonly number[];
  readonly baselineRounds: readonly number[];
  /** store / baseline. */
  readonly ratio: number;
  /** null when pgbench was skipped. */
  readonly pgbenchPerSecond: number | null;
}

export interface StoreResults {
  readonly rows: readonly StoreRow[];
  readonly pgbenchSkipped: string | null;
}

type CycleFactory = (pool: pg.Pool, schema: string) => () => Promise<void>;

export async function benchStore(connectionString: string, options: BenchOptions, log: (line: string) => void): Promise<StoreResults> {
  const pgbenchSkipped = await pgbenchUnavailable();
  const rows: StoreRow[] = [];
  for (const clients of options.storeClients) {
    const [baseline, store] = await alternate(connectionString, clients, options);
    const pgbenchPerSecond = pgbenchSkipped
      ? null
      : await withFreshSchema(connectionString, `pgbench_${clients}`, (schema) =>
          pgbenchCyclesPerSecond(connectionString, schema, clients, options.storeSeconds, options.storeWarmupSeconds),
        );
    const [storePerSecond, baselinePerSecond] = [mean(store), mean(baseline)];
    rows.push({ clients, storePerSecond, baselinePerSecond, storeRounds: store, baselineRounds: baseline, ratio: storePerSecond / baselinePerSecond, pgbenchPerSecond });
    log(`store ${clients} clients: store ${storePerSecond.toFixed(0)}/s, baseline ${baselinePerSecond.toFixed(0)}/s, pgbench ${pgbenchPerSecond?.toFixed(0) ?? 'skipped'}/s`);
  }
  return { rows, pgbenchSkipped };
}

/** Baseline and store, `rounds` times each; the order flips every round so neither always runs second. */
async function alternate(connectionString: string, clients: number, options: BenchOptions): Promise<[number[], number[]]> {
  const baseline: number[] = [];
  const store: number[] = [];
  for (let round = 0; round < options.rounds; round++) {
    const pair = [
      async () => baseline.push(await measure(connectionString, `baseline_${clients}`, clients, options, baselineCycle)),
      async () => store.push(await measure(connectionString, `store_${clients}`, clients, options, storeCycle)),
    ];
    for (const run of round % 2 === 0 ? pair : pair.reverse()) await run();
  }
  return [baseline, store];
}

async function measure(
  connectionString: string,
  label: string,
  clients: number,
  options: BenchOptions,
  factory: CycleFactory,
): Promise<number> {
  return withFreshSchema(connectionString, label, async (schema) => {
    const pool = benchPool(connectionString, clients);
    try {
      const cycle = factory(pool, schema);
      await cyclesPerSecond(clients, options.storeWarmupSeconds, cycle);
      return await cyclesPerSecond(clients, options.storeSeconds, cycle);
    } finally {
      await pool.end();
    }
  });
}
