/**
 * `npm run bench` (`tsx bench/run.ts [--quick] [--store-only | --interceptor-only] [--profile]`):
 * measures the claim store against raw SQL and pgbench, and the interceptor
 * against a bare worker on a real Temporal dev server. Starts Postgres and
 * Temporal itself (or uses DATABASE_URL / TEMPORAL_ADDRESS) and stops what it
 * started. Progress goes to stderr; the table and the JSON line to stdout.
 */
import { loadavg } from 'node:os';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { startPostgres } from '../dev/postgres.js';
import type { PostgresServer } from '../dev/postgres.js';
import { startTemporal } from '../dev/temporal-server.js';
import type { TemporalServer } from '../dev/temporal-server.js';
import { printProfileDifference } from './cpu-profile.js';
import { benchInterceptor } from './interceptor-bench.js';
import { parseOptions } from './options.js';
import { durabilitySettings, localPostmasterPid } from './pg-stats.js';
import { pacedBaseline } from './paced-baseline.js';
import { benchPool } from './pool.js';
import { printInterceptor, printJson, printStore } from './report.js';
import { benchStore } from './store-bench.js';
import { benchKeyDerivation, printKeyDerivation } from './key-derivation.js';
import { summarizeInterceptor } from './summary.js';

/** The pgbench run whose Postgres CPU per cycle the interceptor's is held to: 8 clients, a loaded server that is not saturated. */
const PGBENCH_CPU_CLIENTS = 8;

// Before anything creates a connection: the SDK's info logs would break up the table.
Runtime.install({ logger: new DefaultLogger('WARN') });

const options = parseOptions(process.argv.slice(2));
const log = (line: string) => console.error(`[bench] ${line}`);

const started: { postgres?: PostgresServer; temporal?: TemporalServer } = {};
let stopping: Promise<void> | undefined;
const stopAll = () =>
  (stopping ??= (async () => {
    await started.temporal?.stop().catch((error: unknown) => log(`stopping Temporal failed: ${String(error)}`));
    await started.postgres?.stop().catch((error: unknown) => log(`stopping Postgres failed: ${String(error)}`));
  })());

// Ctrl-C must not leave a Postgres or a Temporal server behind.
process.once('SIGINT', () => void stopAll().finally(() => process.exit(130)));

try {
  const [postgres, temporal] = await Promise.allSettled([
    startPostgres(),
    options.skipInterceptor ? Promise.resolve(undefined) : startTemporal({ log }),
  ]);
  if (postgres.status === 'fulfilled') started.postgres = postgres.value;
  if (temporal.status === 'fulfilled') started.temporal = temporal.value;
  if (postgres.status === 'rejected') throw postgres.reason;
  if (temporal.status === 'rejected') throw temporal.reason;
  const connectionString = postgres.value.connectionString;
  log(`Postgres ${postgres.value.embedded ? '(embedded)' : '(DATABASE_URL)'}${temporal.value ? `, Temporal at ${temporal.value.address}` : ''}`);

  const admin = benchPool(connectionString, 1);
  const [settings, postmaster] = await Promise.all([durabilitySettings(admin), localPostmasterPid(admin)]).finally(() => admin.end());
  // Others' load on a shared machine skews every figure; say how much there was.
  const loadAverage = loadavg().map((value) => Number(value.toFixed(2)));
  console.log(`Mode ${options.quick ? 'quick' : 'full'}; load average ${loadAverage.join(' ')}; Postgres ${JSON.stringify(settings)}`);

  const keyDerivation = benchKeyDerivation(options.quick ? 5 : 15);
  printKeyDerivation(keyDerivation);
  const cpuRoots = { postgres: postmaster };
  const store = options.skipStore ? null : await benchStore(connectionString, options, cpuRoots, log);
  if (store) printStore(store);
  const runs = temporal.value ? await benchInterceptor(temporal.value, connectionString, options, cpuRoots, log) : null;
  const interceptor = runs ? summarizeInterceptor(runs.loaded, options.loaded.inFlight) : null;
  const oneInFlight = runs ? summarizeInterceptor(runs.oneInFlight, options.oneInFlight.inFlight) : null;
  // At the pace the one-in-flight activities ran with the interceptor, right after them.
  const paced = oneInFlight
    ? await pacedBaseline(connectionString, options.oneInFlight.activities, 1_000 / oneInFlight.with.activitiesPerSecond)
    : null;
  const pgbenchReference = store?.rows.find((row) => row.clients === PGBENCH_CPU_CLIENTS)?.pgbench?.postgresCpuMsPerCycle;
  const floors = { paced, pgbenchCpu: pgbenchReference == null ? null : { clients: PGBENCH_CPU_CLIENTS, msPerCycle: pgbenchReference } };
  if (interceptor) printInterceptor(interceptor, 'loaded', floors);
  if (oneInFlight) printInterceptor(oneInFlight, 'one', floors);
  const [profileWithout, profileWith] = ['without', 'with'].map((mode) => runs?.loaded.find((run) => run.mode === mode)?.profile);
  if (profileWithout && profileWith) printProfileDifference(profileWithout, profileWith);
  printJson(options, settings, { loadAverageAtStart: loadAverage, keyDerivation, store, interceptor, interceptorOneInFlight: oneInFlight, floors });
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await stopAll();
}
