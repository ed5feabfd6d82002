/**
 * One partition run: the victim worker makes the workflow's charges, the vendor acts on each and holds
 * its answers (the calls in flight); then the partition (./partition.ts); then the run's facts, read
 * from the vendor, the workflow, the claims, and the victim's own log of its late writes.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { FakeVendor } from '../../../activities/fake-vendor.js';
import { CHARGE_ROUTE } from '../../../activities/index.js';
import type { CrashPointBatch } from '../workflows.js';
import { before } from '../crash-points/crash-point.js';
import { chargeRequests, outcomeOf, whatWasLeft } from '../crash-points/crash-run.js';
import type { CrashRunServices } from '../crash-points/crash-run.js';
import { spawnProxiedWorker } from '../crash-points/proxied-worker.js';
import type { ProxiedWorker } from '../crash-points/proxied-worker.js';
import { RunObservations } from '../crash-points/run-observations.js';
import { between, seededRandom } from '../../../dev/seeded-random.js';
import type { PartitionKind } from './kinds.js';
import type { PartitionFacts } from './oracle.js';
import { lateWritesIn } from './late-writes.js';
import type { LateWrites } from './late-writes.js';
import { partitionAndHeal } from './partition.js';
import { actions as vendorActions } from '../crash-points/batch-point.js';

/** Short, so the partition outlasts it within seconds. */
const LEASE_MS = 2_000;
/** How long the run may take to reach each moment (worker start-ups included) before it calls the partition missed. */
const MOMENT_WAIT_MS = 45_000;
/** How long the partitioned worker has, after the heal, to say what became of its late writes (its retries wait 2 s at most). */
const LATE_WRITE_WAIT_MS = 15_000;

export async function runPartition(kind: PartitionKind, seed: number, services: CrashRunServices): Promise<PartitionFacts> {
  const started = Date.now();
  const random = seededRandom(seed);
  const charges = chargeRequests(between(random, 1, 3));
  const vendor = new FakeVendor();
  await vendor.start();
  vendor.script(CHARGE_ROUTE, ...charges.map(() => 'answer-when-released' as const));
  const taskQueue = `partition-${randomUUID().slice(0, 8)}`;
  const workflowId = `partition-${randomUUID()}`;
  const observations = new RunObservations(services.pool, services.schema, workflowId);
  const workers: ProxiedWorker[] = [];
  const notes: string[] = [];
  const spawnWorker = async () => {
    const worker = await spawnProxiedWorker({ ...services, vendorUrl: vendor.url, taskQueue, leaseMs: LEASE_MS, reconcile: true });
    workers.push(worker);
    return worker;
  };
  const stopWorkers = () => Promise.all(workers.map((worker) => worker.stop()));
  try {
    const victim = await spawnWorker();
    const acted = vendorActions(vendor, charges.length);
    const batch: CrashPointBatch = { charges, waitForPerson: false, activityTaskQueue: taskQueue };
    const handle = await services.client.workflow.start('crashPointWorkflow', { taskQueue: services.workflowTaskQueue, workflowId, args: [batch] });
    const signal = AbortSignal.timeout(MOMENT_WAIT_MS);
    let reached = await before(signal, acted);
    const heldKeys = (await observations.claims()).filter((claim) => claim.claimedBy === victim.name).map((claim) => claim.key);
    reached &&= heldKeys.length === charges.length;
    const context = { victim, heldKeys, vendor, handle, observations, random, signal, leaseMs: LEASE_MS, spawnWorker };
    const { reached: partitionReached, takenOver, note } = await partitionAndHeal(kind, context);
    reached &&= partitionReached;
    notes.push(note);
    const outcome = await outcomeOf(handle);
    const late = await untilLateWritesHeard(victim, kind.service === 'postgres' ? takenOver : []);
    // Stopped before anything is counted: an attempt still running could charge after the count.
    await stopWorkers();
    await keepLogs(kind, seed, workers);
    const seen = { vendor, handle, observations, workers };
    return {
      point: kind.name,
      seed,
      reconcile: true,
      reached,
      cutOffFrom: kind.service,
      notes,
      heldKeys,
      takenOver,
      lateWritesRefused: [...late.refused],
      lateWritesTaken: [...late.taken],
      leasesLost: [...late.lost],
      ...(await whatWasLeft(charges, outcome, seen)),
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    await stopWorkers();
    await vendor.stop();
  }
}

/** Polls the victim's log until it said what became of its settling write on every key taken over, or the wait ran out. */
async function untilLateWritesHeard(victim: ProxiedWorker, takenOver: readonly string[]): Promise<LateWrites> {
  const until = Date.now() + LATE_WRITE_WAIT_MS;
  for (;;) {
    const late = lateWritesIn(victim.process.output());
    if (takenOver.every((key) => late.refused.has(key) || late.taken.has(key)) || Date.now() > until) return late;
    await sleep(100);
  }
}

/** With PARTITION_LOGS=<dir>, each worker's output, the partitioned one first, to read what it did. */
async function keepLogs(kind: PartitionKind, seed: number, workers: readonly ProxiedWorker[]): Promise<void> {
  const dir = process.env['PARTITION_LOGS'];
  if (!dir) return;
  await mkdir(dir, { recursive: true });
  await Promise.all(workers.map((worker, index) => writeFile(join(dir, `${kind.id}-${seed}-worker${index}.log`), worker.process.output())));
}
