/**
 * One measured run: a worker (with or without idempotency) runs a warm-up
 * workflow, then the measured one, while we record per-activity times, the
 * statements it sent, server counters, CPU by process, and event-loop delay.
 */
import { randomUUID } from 'node:crypto';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import type pg from 'pg';
import { Worker } from '@temporalio/worker';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import type { TemporalServer } from '../dev/temporal-server.js';
import { PostgresClaimStore, idempotencyInterceptors } from '../src/index.js';
import { profiled } from './cpu-profile.js';
import type { CpuProfile } from './cpu-profile.js';
import { cpuUsed, snapshotCpu } from './cpu-usage.js';
import type { CpuRoots, CpuUsage } from './cpu-usage.js';
import { COMMITS_PER_COUNTER_READ_PAIR, difference, flushPoolStats, readCounters } from './pg-stats.js';
import type { ServerCounters } from './pg-stats.js';
import { benchPool } from './pool.js';
import { probePool, resetCounts } from './pool-probe.js';
import type { PoolCounts } from './pool-probe.js';
import { ActivityTimer } from './timing-interceptor.js';
import type { EchoArg, echoLoops } from './workflows.js';

export type Mode = 'without' | 'with';

export interface RunSetup {
  readonly temporal: TemporalServer;
  readonly connectionString: string;
  readonly schema: string;
  readonly code: string;
  readonly cpuRoots: CpuRoots;
  /** Profile this process during the measured workflow (`--profile`). */
  readonly profile: boolean;
}

export interface Load {
  readonly activities: number;
  readonly inFlight: number;
  readonly warmupActivities: number;
}

export interface InterceptorRun {
  readonly mode: Mode;
  readonly activities: number;
  readonly seconds: number;
  /** Per-activity milliseconds inside the outermost interceptor. */
  readonly latencies: readonly number[];
  readonly cpu: CpuUsage;
  readonly eventLoopDelayP50Ms: number;
  readonly eventLoopDelayP99Ms: number;
  /** Only with the interceptor: what it asked of Postgres. */
  readonly pool: PoolCounts | null;
  readonly server: ServerCounters | null;
  /** With `--profile`: this process's CPU profile of the measured workflow. */
  readonly profile: CpuProfile | null;
}

/** What a run watches: the per-activity timer, and in the run with idempotency its pool. */
interface Probes {
  readonly timer: ActivityTimer;
  readonly pool: pg.Pool | null;
  readonly counts: PoolCounts | null;
  readonly stats: pg.Pool;
}

export async function runWorker(setup: RunSetup, mode: Mode, load: Load): Promise<InterceptorRun> {
  const pool = mode === 'with' ? benchPool(setup.connectionString, load.inFlight) : null;
  const probes: Probes = { timer: new ActivityTimer(), pool, counts: pool ? probePool(pool) : null, stats: benchPool(setup.connectionString, 1) };
  try {
    const idempotency = pool ? idempotencyInterceptors({ store: new PostgresClaimStore({ pool, schema: setup.schema }) }) : [];
    const taskQueue = `bench-${randomUUID()}`;
    const worker = await createWorker(setup, taskQueue, [probes.timer.factory, ...idempotency]);
    const execute = async (total: number) => {
      const ran = await setup.temporal.env.client.workflow.execute<typeof echoLoops>('echoLoops', {
        taskQueue,
        workflowId: `bench-${mode}-${randomUUID()}`,
        args: [{ run: randomUUID(), total, inFlight: load.inFlight }],
      });
      if (ran !== total) throw new Error(`the workflow ran ${ran} activities, not ${total}`);
    };
    return { mode, ...(await worker.runUntil(() => measure(setup, probes, load, execute, `${mode}-${load.inFlight}`))) };
  } finally {
    await pool?.end();
    await probes.stats.end();
  }
}

/** The same worker settings in both modes; only the interceptors differ. */
function createWorker(setup: RunSetup, taskQueue: string, interceptors: ActivityInterceptorsFactory[]): Promise<Worker> {
  return Worker.create({
    connection: setup.temporal.env.nativeConnection,
    namespace: setup.temporal.namespace,
    taskQueue,
    workflowBundle: { code: setup.code },
    activities: { echo: async (arg: EchoArg) => arg },
    // The timer comes first in the list: outermost, so with idempotency it times idempotency too.
    interceptors: { activity: interceptors },
    maxConcurrentActivityTaskExecutions: 100,
    shutdownGraceTime: '10s',
  });
}

/** Warm up, reset every probe, then run the measured workflow between two snapshots. */
async function measure(
  setup: RunSetup,
  probes: Probes,
  load: Load,
  execute: (total: number) => Promise<void>,
  label: string,
): Promise<Omit<InterceptorRun, 'mode'>> {
  await execute(load.warmupActivities);
  probes.timer.reset();
  if (probes.pool) await flushPoolStats(probes.pool);
  if (probes.counts) resetCounts(probes.counts);
  const serverBefore = await readCounters(probes.stats);
  const cpuBefore = await snapshotCpu(setup.cpuRoots);
  const loopDelay = monitorEventLoopDelay({ resolution: 1 });
  loopDelay.enable();
  const started = performance.now();
  let profile: CpuProfile | null = null;
  if (setup.profile) profile = (await profiled(label, load.activities, () => execute(load.activities))).profile;
  else await execute(load.activities);
  const seconds = (performance.now() - started) / 1_000;
  loopDelay.disable();
  const cpu = cpuUsed(await snapshotCpu(setup.cpuRoots), cpuBefore);
  const flushes = probes.pool ? await flushPoolStats(probes.pool) : 0;
  return {
    activities: load.activities,
    seconds,
    latencies: [...probes.timer.samples],
    cpu,
    eventLoopDelayP50Ms: loopDelay.percentile(50) / 1e6,
    eventLoopDelayP99Ms: loopDelay.percentile(99) / 1e6,
    pool: probes.counts,
    server: probes.pool ? difference(await readCounters(probes.stats), serverBefore, flushes + COMMITS_PER_COUNTER_READ_PAIR) : null,
    profile,
  };
}
