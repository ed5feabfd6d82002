/** Turns the raw runs into the figures the benchmark reports, and checks them against the targets. */
import type { InterceptorRun } from './worker-run.js';
import { percentile } from './stats.js';

/**
 * Issue 15's targets. `addedP50OverFloorMs`: at one in flight, what hashing, encoding and bookkeeping
 * may add to the p50 of the store's two statements sent straight through a pool at the same pace.
 * `batchingRatio` (issue 26): the store with batching at least as fast as itself without, closed loop,
 * at every client count; a mean below it whose best round reaches it is marked "within spread".
 */
export const TARGETS = {
  storeRatio: 0.8,
  batchingRatio: 1.0,
  throughputRatio: 0.9,
  statementsPerActivity: 1.4,
  addedP50OverFloorMs: 0.3,
} as const;

export interface ModeSummary {
  /** All activities over all measured seconds, across rounds. */
  readonly activitiesPerSecond: number;
  readonly perRound: readonly number[];
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** CPU milliseconds per activity, by who spent it. */
  readonly cpuMsPerActivity: { readonly node: number; readonly postgres: number; readonly temporal: number; readonly other: number };
  /** Share of both cores busy, whoever used them. */
  readonly machineBusy: number;
  /** Node's event-loop delay, worst of the rounds: time a ready callback (a query result) waits to run. */
  readonly eventLoopDelayP50Ms: number;
  readonly eventLoopDelayP99Ms: number;
}

export interface InterceptorSummary {
  readonly inFlight: number;
  readonly activitiesPerRun: number;
  readonly order: string;
  readonly without: ModeSummary;
  readonly with: ModeSummary;
  readonly throughputRatio: number;
  readonly addedP50Ms: number;
  readonly addedP99Ms: number;
  readonly statementsPerActivity: number;
  readonly commitsPerActivity: number;
  readonly walSyncsPerActivity: number;
  readonly walBytesPerActivity: number;
  /** Share of statements that found the pool full and waited for a connection. */
  readonly queuedForConnectionShare: number;
  /** p50 / p99 milliseconds per statement kind, as the pool's caller saw them. */
  readonly statementMs: Readonly<Record<string, { count: number; p50: number; p99: number }>>;
}

export function summarizeInterceptor(runs: readonly InterceptorRun[], inFlight: number): InterceptorSummary {
  const without = summarizeMode(runs.filter((run) => run.mode === 'without'));
  const withIt = summarizeMode(runs.filter((run) => run.mode === 'with'));
  const measured = runs.filter((run) => run.mode === 'with');
  const activities = sum(measured.map((run) => run.activities));
  const statements = sum(measured.map((run) => run.pool?.statements ?? 0));
  const latencyByKind = new Map<string, number[]>();
  for (const run of measured) {
    for (const [kind, samples] of run.pool?.latencyByKind ?? []) latencyByKind.set(kind, [...(latencyByKind.get(kind) ?? []), ...samples]);
  }
  return {
    inFlight,
    activitiesPerRun: runs[0]?.activities ?? 0,
    order: runs.map((run) => run.mode).join(', '),
    without,
    with: withIt,
    throughputRatio: withIt.activitiesPerSecond / without.activitiesPerSecond,
    addedP50Ms: withIt.p50Ms - without.p50Ms,
    addedP99Ms: withIt.p99Ms - without.p99Ms,
    statementsPerActivity: statements / activities,
    commitsPerActivity: sum(measured.map((run) => run.server?.commits ?? 0)) / activities,
    walSyncsPerActivity: sum(measured.map((run) => run.server?.walSyncs ?? 0)) / activities,
    walBytesPerActivity: sum(measured.map((run) => run.server?.walBytes ?? 0)) / activities,
    queuedForConnectionShare: sum(measured.map((run) => run.pool?.queuedForConnection ?? 0)) / statements,
    statementMs: Object.fromEntries(
      [...latencyByKind].map(([kind, samples]) => [kind, { count: samples.length, p50: percentile(samples, 50), p99: percentile(samples, 99) }]),
    ),
  };
}

function summarizeMode(runs: readonly InterceptorRun[]): ModeSummary {
  const latencies = runs.flatMap((run) => run.latencies);
  const activities = sum(runs.map((run) => run.activities));
  const cpu = (pick: (run: InterceptorRun) => number) => sum(runs.map(pick)) / activities;
  const node = cpu((run) => run.cpu.nodeMs);
  const postgres = cpu((run) => run.cpu.postgresMs);
  const temporal = cpu((run) => run.cpu.temporalMs);
  return {
    activitiesPerSecond: activities / sum(runs.map((run) => run.seconds)),
    perRound: runs.map((run) => run.activities / run.seconds),
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    cpuMsPerActivity: { node, postgres, temporal, other: cpu((run) => run.cpu.machineBusyMs) - node - postgres - temporal },
    machineBusy: sum(runs.map((run) => run.cpu.machineBusyMs)) / sum(runs.map((run) => run.cpu.machineTotalMs)),
    eventLoopDelayP50Ms: Math.max(...runs.map((run) => run.eventLoopDelayP50Ms)),
    eventLoopDelayP99Ms: Math.max(...runs.map((run) => run.eventLoopDelayP99Ms)),
  };
}

function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

