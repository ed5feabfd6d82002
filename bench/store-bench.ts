/**
 * Store throughput: claim-and-complete cycles per second through
 * `PostgresClaimStore` (batching, as shipped, and with `batchStatements: false`,
 * each statement alone as before), beside the same SQL sent straight through a
 * pool and beside pgbench, at each client count. Every measurement gets its own
 * fresh schema and its own pool (as many connections as clients), and a
 * warm-up; the three run `rounds` times each, in a rotated order, and their
 * means are compared.
 */
import type pg from 'pg';
import { baselineCycle } from './baseline-cycle.js';
import { cyclesPerSecond } from './closed-loop.js';
import type { CpuRoots } from './cpu-usage.js';
import type { BenchOptions } from './options.js';
import { pgbenchCycles, pgbenchUnavailable } from './pgbench.js';
import type { PgbenchResult } from './pgbench.js';
import { benchPool } from './pool.js';
import { withFreshSchema } from './schema.js';
import { mean } from './stats.js';
import { storeCycle } from './store-cycle.js';

export interface StoreRow {
  readonly clients: number;
  readonly storePerSecond: number;
  /** The store with every claim and record in a statement of its own. */
  readonly unbatchedPerSecond: number;
  readonly baselinePerSecond: number;
  /** Each round's figures, in run order within the round. */
  readonly storeRounds: readonly number[];
  readonly unbatchedRounds: readonly number[];
  readonly baselineRounds: readonly number[];
  /** store / baseline. */
  readonly ratio: number;
  /** store / unbatched store: what batching gains (or costs) at this many clients. */
  readonly batchingRatio: number;
  /** null when pgbench was skipped. */
  readonly pgbench: PgbenchResult | null;
}

export interface StoreResults {
  readonly rows: readonly StoreRow[];
  readonly pgbenchSkipped: string | null;
}

type CycleFactory = (pool: pg.Pool, schema: string) => () => Promise<void>;

const VARIANTS = {
  baseline: baselineCycle,
  store: storeCycle({}),
  unbatched: storeCycle({ batchStatements: false }),
} satisfies Record<string, CycleFactory>;

type Variant = keyof typeof VARIANTS;

export async function benchStore(
  connectionString: string,
  options: BenchOptions,
  cpuRoots: CpuRoots,
  log: (line: string) => void,
): Promise<StoreResults> {
  const pgbenchSkipped = await pgbenchUnavailable();
  const rows: StoreRow[] = [];
  for (const clients of options.storeClients) {
    const rounds = await rotate(connectionString, clients, options);
    const pgbench = pgbenchSkipped
      ? null
      : await withFreshSchema(connectionString, `pgbench_${clients}`, (schema) =>
          pgbenchCycles(connectionString, schema, clients, options.storeSeconds, options.storeWarmupSeconds, cpuRoots),
        );
    const [storePerSecond, unbatchedPerSecond, baselinePerSecond] = [mean(rounds.store), mean(rounds.unbatched), mean(rounds.baseline)];
    rows.push({
      clients,
      storePerSecond,
      unbatchedPerSecond,
      baselinePerSecond,
      storeRounds: rounds.store,
      unbatchedRounds: rounds.unbatched,
      baselineRounds: rounds.baseline,
      ratio: storePerSecond / baselinePerSecond,
      batchingRatio: storePerSecond / unbatchedPerSecond,
      pgbench,
    });
    log(
      `store ${clients} clients: store ${storePerSecond.toFixed(0)}/s, unbatched ${unbatchedPerSecond.toFixed(0)}/s, ` +
        `baseline ${baselinePerSecond.toFixed(0)}/s, pgbench ${pgbench?.perSecond.toFixed(0) ?? 'skipped'}/s`,
    );
  }
  return { rows, pgbenchSkipped };
}

/** Each variant `rounds` times; the order rotates every round, so none always runs first or last. */
async function rotate(connectionString: string, clients: number, options: BenchOptions): Promise<Record<Variant, number[]>> {
  const results: Record<Variant, number[]> = { baseline: [], store: [], unbatched: [] };
  const order = Object.keys(VARIANTS) as Variant[];
  for (let round = 0; round < options.rounds; round++) {
    for (const variant of [...order.slice(round % order.length), ...order.slice(0, round % order.length)]) {
      results[variant].push(await measure(connectionString, `${variant}_${clients}`, clients, options, VARIANTS[variant]));
    }
  }
  return results;
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
