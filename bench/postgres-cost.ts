/**
 * `npx tsx bench/postgres-cost.ts`: where the store's Postgres CPU per claim-and-record cycle goes,
 * measured. pgbench runs the store's own two statements (imported from sql/claims.ts, with
 * the parameters an unsigned claim without recorded arguments sends, as literals and pgbench
 * variables) beside pgbench's bare cycle and variants that each leave one part out; every variant
 * in a fresh schema, rounds alternated. The parts left out are what the store needs: the
 * differences say what each costs, not what could go.
 */
import type pg from 'pg';
import { startPostgres } from '../dev/postgres.js';
import { baselineCycle } from './baseline-cycle.js';
import { cyclesPerSecond } from './closed-loop.js';
import { cpuUsed, snapshotCpu } from './cpu-usage.js';
import type { CpuRoots } from './cpu-usage.js';
import { storeCycle } from './store-cycle.js';
import { localPostmasterPid } from './pg-stats.js';
import { claimScript, pgbenchCycles, pgbenchUnavailable } from './pgbench.js';
import { benchPool } from './pool.js';
import { withFreshSchema } from './schema.js';
import { storeScript } from './store-script.js';

const CLIENTS = 8;
const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 8);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 2);

interface Variant {
  readonly name: string;
  /** The pgbench script for the schema; or, from Node, the cycle `CLIENTS` callers run back to back. */
  readonly script?: (schema: string) => string;
  readonly node?: (pool: pg.Pool, schema: string) => () => Promise<void>;
  /** Run on the fresh schema before the script. */
  readonly prepare?: (schema: string) => string;
}

const VARIANTS: Variant[] = [
  { name: "pgbench's bare cycle (the bench's reference)", script: claimScript },
  { name: "the store's two statements", script: (schema) => storeScript(schema) },
  {
    name: '  the claim returning key and token only',
    script: (schema) => storeScript(schema, { claim: (sql) => sql.replace(/RETURNING[\s\S]*$/, 'RETURNING key, token') }),
  },
  { name: 'the same two statements from Node (pg.Pool)', node: baselineCycle },
  { name: 'PostgresClaimStore (begin, complete)', node: storeCycle({}) },
];

/** Cycles per second and Postgres's CPU per cycle of `CLIENTS` Node callers on one pool. */
async function fromNode(connectionString: string, schema: string, cycleOf: NonNullable<Variant['node']>, cpuRoots: CpuRoots) {
  const pool = benchPool(connectionString, CLIENTS);
  try {
    const cycle = cycleOf(pool, schema);
    await cyclesPerSecond(CLIENTS, 2, cycle);
    const before = await snapshotCpu(cpuRoots);
    const perSecond = await cyclesPerSecond(CLIENTS, SECONDS, cycle);
    const cpu = cpuUsed(await snapshotCpu(cpuRoots), before);
    return { perSecond, postgresCpuMsPerCycle: cpu.postgresMs / (perSecond * SECONDS) };
  } finally {
    await pool.end();
  }
}

const unavailable = await pgbenchUnavailable();
if (unavailable) throw new Error(unavailable);
const postgres = await startPostgres();
try {
  const admin = benchPool(postgres.connectionString, 1);
  const postmaster = await localPostmasterPid(admin).finally(() => admin.end());
  const cpuRoots = { postgres: postmaster };
  const results = new Map<string, { perSecond: number[]; cpu: number[] }>(VARIANTS.map((variant) => [variant.name, { perSecond: [], cpu: [] }]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const variant of VARIANTS) {
      await withFreshSchema(postgres.connectionString, 'cost', async (schema) => {
        if (variant.prepare) {
          const pool = benchPool(postgres.connectionString, 1);
          await pool.query(variant.prepare(schema)).finally(() => pool.end());
        }
        const result = variant.node
          ? await fromNode(postgres.connectionString, schema, variant.node, cpuRoots)
          : await pgbenchCycles(postgres.connectionString, schema, CLIENTS, SECONDS, 2, cpuRoots, variant.script!(schema));
        results.get(variant.name)!.perSecond.push(result.perSecond);
        results.get(variant.name)!.cpu.push(result.postgresCpuMsPerCycle ?? Number.NaN);
        console.error(`[cost] round ${round + 1}: ${variant.name.trim()}: ${result.perSecond.toFixed(0)}/s, ${result.postgresCpuMsPerCycle?.toFixed(3)} ms`);
      });
    }
  }
  const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
  const store = mean(results.get(VARIANTS[1]!.name)!.cpu);
  console.log(`\nPostgres CPU per claim-and-record cycle, pgbench, ${CLIENTS} clients, ${SECONDS} s x ${ROUNDS} rounds alternated`);
  console.log(`${'cycle'.padEnd(46)} ${'cycles/s'.padStart(9)} ${'pg CPU ms'.padStart(10)} ${'vs the store'.padStart(13)}`);
  for (const variant of VARIANTS) {
    const { perSecond, cpu } = results.get(variant.name)!;
    const ms = mean(cpu);
    console.log(`${variant.name.padEnd(46)} ${mean(perSecond).toFixed(0).padStart(9)} ${ms.toFixed(3).padStart(10)} ${(ms - store >= 0 ? '+' : '') + (ms - store).toFixed(3).padStart(12)}`);
  }
} finally {
  await postgres.stop();
}
