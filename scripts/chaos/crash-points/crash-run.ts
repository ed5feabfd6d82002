/**
 * One crash-point run: a fresh vendor and task queue, the victim worker, the workflow; the point
 * kills where it says; a fresh worker finishes (and, for the operator's point, a person acts);
 * then the run's facts, read from the vendor, the workflow and the claims.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { FakeVendor } from '../../../activities/fake-vendor.js';
import { CHARGE_ROUTE } from '../../../activities/index.js';
import type { ChargeRequest, VendorReceipt } from '../../../activities/index.js';
import { applicationFailureIn } from '../../../dev/failures.js';
import type { CrashPointBatch } from '../workflows.js';
import type { CrashContext, CrashPoint } from './crash-point.js';
import { spawnProxiedWorker } from './proxied-worker.js';
import type { ProxiedWorker } from './proxied-worker.js';
import type { RunFacts, WorkflowOutcome } from './run-facts.js';
import { RunObservations, orphanRefusals } from './run-observations.js';
import { seededRandom } from '../../../dev/seeded-random.js';
import { IdempotencyOrphanedClaim } from '../../../src/index.js';

export interface CrashRunServices {
  readonly client: Client;
  readonly pool: pg.Pool;
  readonly temporalAddress: string;
  readonly databaseUrl: string;
  /** Where the campaign's own worker runs the workflows (the killed workers run only the charges). */
  readonly workflowTaskQueue: string;
  readonly schema: string;
}

/** Short, so a dead owner is recognised within the next attempt (3 s start-to-close). */
const LEASE_MS = 2_000;
/** How long a point may take to reach its moment (worker start-ups included) before the run calls it missed. */
const CRASH_WAIT_MS = 45_000;
/** How long the workflow then has to complete or be refused by name before it counts as left open. */
const OUTCOME_WAIT_MS = 45_000;

export async function runCrashPoint(point: CrashPoint, seed: number, services: CrashRunServices): Promise<RunFacts> {
  const started = Date.now();
  const random = seededRandom(seed);
  const reconcile = point.reconcile === 'either' ? random() < 0.5 : point.reconcile === 'on';
  const charges = chargesFor(point, random);
  const vendor = new FakeVendor(point.vendorLatencyMs ? { latencyMs: point.vendorLatencyMs } : {});
  await vendor.start();
  const taskQueue = `crash-${randomUUID().slice(0, 8)}`;
  const workflowId = `crash-${randomUUID()}`;
  const workers: ProxiedWorker[] = [];
  const notes: string[] = [];
  let stopped: Promise<unknown> | undefined;
  const stopWorkers = () => (stopped ??= Promise.all(workers.map((worker) => worker.stop())));
  const spawnWorker = async (options: { readonly vendorStalled?: boolean } = {}) => {
    const targets = { ...services, vendorUrl: vendor.url, taskQueue, leaseMs: LEASE_MS, reconcile };
    const worker = await spawnProxiedWorker(targets, options);
    workers.push(worker);
    return worker;
  };
  try {
    const victim = await spawnWorker();
    const context: CrashContext = {
      victim,
      vendor,
      observations: new RunObservations(services.pool, services.schema, workflowId),
      random,
      signal: AbortSignal.timeout(CRASH_WAIT_MS),
      spawnWorker,
      note: (text) => void notes.push(text),
    };
    const crashed = point.crash(context);
    const batch: CrashPointBatch = { charges, waitForPerson: point.waitForPerson ?? false, activityTaskQueue: taskQueue };
    const handle = await services.client.workflow.start('crashPointWorkflow', { taskQueue: services.workflowTaskQueue, workflowId, args: [batch] });
    let reached = await crashed;
    await spawnWorker();
    if (point.afterCrash) {
      const cli = { databaseUrl: services.databaseUrl, temporalAddress: services.temporalAddress, schema: services.schema };
      reached = (await point.afterCrash({ ...context, signal: AbortSignal.timeout(CRASH_WAIT_MS), handle, cli })) && reached;
    }
    const outcome = await outcomeOf(handle);
    // Stopped before anything is counted: an attempt still running (a batch's, after its workflow failed) could charge after the count.
    await stopWorkers();
    const seen = { vendor, handle, observations: context.observations, workers };
    return { point: point.name, seed, reconcile, reached, notes, ...(await whatWasLeft(charges, outcome, seen)), seconds: (Date.now() - started) / 1000 };
  } finally {
    await stopWorkers();
    await vendor.stop();
  }
}

/** The run's facts as the vendor, the workflow's history, the ledger and the worker processes show them. */
export async function whatWasLeft(
  charges: readonly ChargeRequest[],
  outcome: WorkflowOutcome,
  seen: { vendor: FakeVendor; handle: WorkflowHandle; observations: RunObservations; workers: readonly ProxiedWorker[] },
): Promise<Omit<RunFacts, 'point' | 'seed' | 'reconcile' | 'reached' | 'notes' | 'seconds'>> {
  const charged = seen.vendor.actionsOn(CHARGE_ROUTE);
  return {
    orderIds: charges.map((charge) => charge.orderId),
    outcome,
    actions: charged.map((action) => ({ orderId: (action.body as ChargeRequest).orderId, id: action.id, key: action.idempotencyKey })),
    keysSentAgain: [...seen.vendor.keysSentAgain(CHARGE_ROUTE).keys()],
    refusals: await orphanRefusals(seen.handle),
    reconciliations: await seen.observations.reconciliations(),
    workersDiedAlone: seen.workers.filter((worker) => worker.exitedOnItsOwn).length,
  };
}

function chargesFor(point: CrashPoint, random: () => number): ChargeRequest[] {
  return chargeRequests(point.charges?.(random) ?? 1);
}

/** `count` charges, each a distinct order. */
export function chargeRequests(count: number): ChargeRequest[] {
  const order = `crash-${randomUUID().slice(0, 8)}`;
  return Array.from({ length: count }, (_, i) => ({
    orderId: `${order}-${i}`,
    customerId: 'cus_crash',
    amountCents: 100 + i,
    currency: 'EUR',
  }));
}

/** Completed, refused by name, failed otherwise, or still open after the bounded wait (then terminated). */
export async function outcomeOf(handle: WorkflowHandle): Promise<WorkflowOutcome> {
  const ended = handle.result().then(
    (receipts: VendorReceipt[]): WorkflowOutcome => ({ kind: 'completed', receipts }),
    (error: unknown): WorkflowOutcome => {
      const type = applicationFailureIn(error)?.type ?? (error instanceof Error ? error.name : String(error));
      // A crash may leave a call for a person, nothing else: a rejected record or a key reused is a failure, not a refusal.
      return type === IdempotencyOrphanedClaim ? { kind: 'refused', type } : { kind: 'failed', type };
    },
  );
  const waited = new AbortController();
  const timedOut = sleep(OUTCOME_WAIT_MS, undefined, { signal: waited.signal }).then(
    (): WorkflowOutcome => ({ kind: 'open' }),
    () => ({ kind: 'open' }) as const,
  );
  const outcome = await Promise.race([ended, timedOut]);
  waited.abort(); // the timer must not hold the process open once the workflow ended
  if (outcome.kind === 'open') await handle.terminate('crash-points: left open past the bounded wait').catch(() => undefined);
  return outcome;
}
