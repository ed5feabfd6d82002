/**
 * The failover run: worker processes (the README's registration, nothing
 * added) reach Postgres through HAProxy; mid-run, with many calls in flight,
 * the primary's host is killed, the standby promoted, the proxy follows. Then:
 * which claims and records did the promotion lose, did any call run twice, is
 * any action lost, did every workflow end completed or refused by name, did any
 * worker die? With a synchronous standby nothing may be lost that a worker was
 * told was kept; with an asynchronous one the figures are the README's trap.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { Client } from '@temporalio/client';
import { migrate } from '../../src/index.js';
import { FakeVendor } from '../../activities/fake-vendor.js';
import { Teardown } from '../../dev/teardown.js';
import { spawnExampleWorker } from '../../dev/worker-process.js';
import type { WorkerProcess } from '../../dev/worker-process.js';
import { repeatedActions } from '../chaos/report.js';
import { readClaims } from './claims-snapshot.js';
import { FailoverCluster } from './cluster.js';
import type { Replication } from './cluster.js';
import { callsTwice, countKeysActedTwice, lostActions, lostAtFailover, outcomeCounts, refusalCounts } from './findings.js';
import type { FailoverReport } from './report.js';
import { seededRandom } from '../../dev/seeded-random.js';
import { runWorkload } from './workload.js';

export interface FailoverOptions {
  readonly client: Client;
  readonly temporalAddress: string;
  /** Prebuilt bundle with chaosBatchWorkflow (scripts/chaos/workflows.ts). */
  readonly workflowBundlePath: string;
  readonly replication: Replication;
  /** Decides where in the run the primary dies (after 20 to 50 % of the calls). */
  readonly seed: number;
  readonly workflows: number;
  readonly activitiesPerWorkflow: number;
  readonly workers: number;
  /** One-way latency of the standby's link; default 100 ms. */
  readonly linkDelayMs?: number;
  /**
   * How long the failover manager takes to call the primary dead; default 5 s, longer than an
   * attempt's 3 s start-to-close timeout, so the calls in flight at the kill are retried meanwhile.
   */
  readonly detectMs?: number;
  /** One workflow starts every this many ms, so claims are being made all through the run, at the kill too; default 150 ms. */
  readonly startEveryMs?: number;
  /** Workflows not ended by then count as `did not end`; default 120 s. */
  readonly workflowDeadlineMs?: number;
  /**
   * Aborted: everything the run started is stopped at once (Postgres too, which pg_ctl puts in a
   * session of its own, out of reach of a terminal's Ctrl-C), and the run fails.
   */
  readonly signal?: AbortSignal;
  readonly log: (line: string) => void;
}

const SCHEMA = 'failover';
const VENDOR_LATENCY_MS = 150;

export async function runFailover(options: FailoverOptions): Promise<FailoverReport> {
  const started = Date.now();
  const linkDelayMs = options.linkDelayMs ?? 100;
  const detectMs = options.detectMs ?? 5_000;
  const teardown = new Teardown();
  const unexpectedExits: FailoverReport['unexpectedExits'][number][] = [];
  let stopping = false;
  const stopNow = () => {
    stopping = true;
    void teardown.run();
  };
  options.signal?.addEventListener('abort', stopNow, { once: true });
  try {
    options.signal?.throwIfAborted();
    const cluster = await teardown.start(
      () => FailoverCluster.start({ replication: options.replication, linkDelayMs }),
      (started) => started.stop(),
    );
    const pool = await teardown.start(
      async () => new pg.Pool({ connectionString: cluster.proxyUrl, max: 2 }).on('error', () => undefined),
      (pool) => pool.end(),
    );
    await migrate(pool, { schema: SCHEMA });
    const vendor = await teardown.start(
      async () => {
        const vendor = new FakeVendor({ latencyMs: VENDOR_LATENCY_MS });
        await vendor.start();
        return vendor;
      },
      (vendor) => vendor.stop(),
    );
    const taskQueue = `failover-${randomUUID().slice(0, 8)}`;
    const workers = await spawnWorkers(options, teardown, { databaseUrl: cluster.proxyUrl, taskQueue, vendorUrl: vendor.url });
    for (const worker of workers) {
      void worker.exited.then(({ code, signal }) => {
        if (!stopping) unexpectedExits.push({ pid: worker.pid, code, signal, lastOutput: worker.output().slice(-2_000) });
      });
    }
    const random = seededRandom(options.seed);
    const total = options.workflows * options.activitiesPerWorkflow;
    const killAfter = Math.ceil(total * (0.2 + 0.3 * random()));
    options.log(`${options.replication}: ${options.workers} workers on ${taskQueue}, ${total} calls; the primary dies after ${killAfter}`);

    let ended = false;
    const ending = runWorkload({
      client: options.client,
      taskQueue,
      label: options.replication,
      workflows: options.workflows,
      activitiesPerWorkflow: options.activitiesPerWorkflow,
      startEveryMs: options.startEveryMs ?? 150,
      deadlineMs: options.workflowDeadlineMs ?? 120_000,
    }).finally(() => (ended = true));
    ending.catch(() => undefined); // awaited below; a failed failover must not leave it unheard
    while (vendor.actions.length < killAfter && !ended) {
      options.signal?.throwIfAborted();
      await sleep(5);
    }
    if (ended) throw new Error(`Every workflow ended before ${killAfter} calls went out: there was no run to kill the primary in.`);
    const actionsBeforeKill = vendor.actions.length;
    const timeline = await cluster.failover(detectMs, (promotedUrl) => readClaims(promotedUrl, SCHEMA));
    options.log(`${options.replication}: promoted after ${timeline.promotedAfterMs} ms, the proxy followed after ${timeline.followedAfterMs} ms`);
    const outcomes = await ending;
    // A record the attempt stopped waiting for is still written in the background: let those land.
    await openClaimsSettled(pool);
    stopping = true;
    await Promise.all(workers.map((worker) => stopWorker(worker)));
    const calledKeys = new Set(vendor.log.map((request) => request.idempotencyKey));
    const openClaimsAtEnd = (await openClaims(pool)).map((claim) => ({ ...claim, called: calledKeys.has(claim.key) }));
    const dead = await cluster.readDeadPrimary((url) => readClaims(url, SCHEMA));
    // Every request before the promoted node took writes was claimed on the dead primary.
    const calledBeforeService = new Set(vendor.log.filter((request) => request.receivedAt < timeline.inServiceAt).map((request) => request.idempotencyKey));
    const lost = lostAtFailover(dead, timeline.kept);
    return {
      replication: options.replication,
      seed: options.seed,
      linkDelayMs,
      workflows: options.workflows,
      activities: total,
      workers: options.workers,
      seconds: (Date.now() - started) / 1000,
      actionsBeforeKill,
      promotedAfterMs: timeline.promotedAfterMs,
      followedAfterMs: timeline.followedAfterMs,
      claimsOnDeadPrimary: dead.size,
      openOnDeadPrimary: [...dead.values()].filter((claim) => claim.state !== 'completed').length,
      claimsLost: lost.claims,
      claimsLostAfterCall: lost.claims.filter((key) => calledBeforeService.has(key)),
      recordsLost: lost.records,
      callsTwice: callsTwice(vendor),
      keysActedTwice: countKeysActedTwice(vendor),
      actionsRepeated: repeatedActions(vendor.actions).length,
      lostActions: lostActions(vendor, outcomes),
      outcomes: outcomeCounts(outcomes),
      refusals: refusalCounts(outcomes, lost.records),
      openClaimsAtEnd,
      unexpectedExits,
    };
  } finally {
    options.signal?.removeEventListener('abort', stopNow);
    stopping = true;
    await teardown.done();
  }
}

async function openClaims(pool: pg.Pool): Promise<Omit<FailoverReport['openClaimsAtEnd'][number], 'called'>[]> {
  const { rows } = await pool.query<Omit<FailoverReport['openClaimsAtEnd'][number], 'called'>>(
    `SELECT key, state, attempt, outcome_note AS note FROM "${SCHEMA}".claims WHERE state <> 'completed' ORDER BY key`,
  );
  return rows;
}

/** Waits until the number of claims without an outcome has not changed for 3 s (30 s at most). */
async function openClaimsSettled(pool: pg.Pool): Promise<void> {
  const deadline = Date.now() + 30_000;
  let last = (await openClaims(pool)).length;
  let unchangedSince = Date.now();
  while (Date.now() < deadline && Date.now() - unchangedSince < 3_000) {
    await sleep(500);
    const now = (await openClaims(pool)).length;
    if (now !== last) [last, unchangedSince] = [now, Date.now()];
  }
}

/** The example worker, as users register it, reaching Postgres only through the proxy. */
function spawnWorkers(
  options: FailoverOptions,
  teardown: Teardown,
  settings: { readonly databaseUrl: string; readonly taskQueue: string; readonly vendorUrl: string },
): Promise<WorkerProcess[]> {
  const spawn = () =>
    spawnExampleWorker(
      { ...settings, temporalAddress: options.temporalAddress, workflowBundlePath: options.workflowBundlePath, schema: SCHEMA },
      { signal: teardown.signal },
    );
  return Promise.all(Array.from({ length: options.workers }, () => teardown.start(spawn, stopWorker)));
}

async function stopWorker(worker: WorkerProcess): Promise<void> {
  worker.kill('SIGTERM');
  const killLater = setTimeout(() => worker.kill('SIGKILL'), 15_000);
  await worker.exited;
  clearTimeout(killLater);
}
