/**
 * Benchmark settings from the command line. `--quick` keeps a development
 * iteration under a minute on a shared 2-core machine; the default is the
 * full run whose figures are worth reporting.
 */
import type { Load } from './worker-run.js';

export interface BenchOptions {
  readonly quick: boolean;
  /** Concurrent clients for the store measurements. */
  readonly storeClients: readonly number[];
  /** Seconds per measured store run; whole seconds because pgbench's `-T` takes no fractions. */
  readonly storeSeconds: number;
  readonly storeWarmupSeconds: number;
  /** The main interceptor measurement: N activities, 50 in flight. */
  readonly loaded: Load;
  /** The same with one activity in flight: the per-call cost without queueing. */
  readonly oneInFlight: Load;
  /** How many times each pair (store and baseline; without and with) runs; results are pooled. */
  readonly rounds: number;
  readonly skipStore: boolean;
  readonly skipInterceptor: boolean;
  /** Profile the worker's CPU in each measured interceptor run, and print where the interceptor's time goes. */
  readonly profile: boolean;
}

export function parseOptions(argv: readonly string[]): BenchOptions {
  const known = new Set(['--quick', '--store-only', '--interceptor-only', '--profile']);
  const unknown = argv.filter((arg) => !known.has(arg));
  if (unknown.length > 0) throw new Error(`Unknown flag(s) ${unknown.join(' ')}; use --quick, --store-only, --interceptor-only or --profile.`);
  const quick = argv.includes('--quick');
  return {
    quick,
    storeClients: quick ? [1, 8, 32] : [1, 2, 4, 8, 16, 32, 64],
    storeSeconds: quick ? 1 : 5,
    storeWarmupSeconds: 1,
    // Each worker first runs an unmeasured workflow (JIT, pool connections, sticky cache).
    loaded: { activities: quick ? 400 : 2_000, inFlight: 50, warmupActivities: quick ? 100 : 300 },
    oneInFlight: { activities: quick ? 60 : 150, inFlight: 1, warmupActivities: 20 },
    rounds: quick ? 1 : 3,
    skipStore: argv.includes('--interceptor-only'),
    skipInterceptor: argv.includes('--store-only'),
    profile: argv.includes('--profile'),
  };
}
