/**
 * The failover run's workload: one workflow every `startEveryMs`, each charges and calls in
 * parallel, so claims are being made at every moment, the kill's too. How each workflow ended,
 * and the receipts a completed one got back.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import type { VendorReceipt } from '../../activities/index.js';
import { applicationFailureIn } from '../../dev/failures.js';
import type { ChaosBatch } from '../chaos/workflows.js';
import { DID_NOT_END } from './report.js';

export interface WorkloadOptions {
  readonly client: Client;
  readonly taskQueue: string;
  /** Names the workflows, so two runs on one Temporal server never share an id (or a key). */
  readonly label: string;
  readonly workflows: number;
  readonly activitiesPerWorkflow: number;
  readonly startEveryMs: number;
  /** Workflows not ended by then count as `did not end`. */
  readonly deadlineMs: number;
}

export interface Ending {
  readonly workflowId: string;
  readonly outcome: string;
  /** What a completed workflow got back from its calls. */
  readonly receipts: readonly VendorReceipt[];
  /** What it asked the vendor for, in the order of its receipts: its charges, then its calls. */
  readonly requested: readonly unknown[];
  /** A refusal's case (`owner-died`, `owner-hung`, …) and the key it refused, from its details. */
  readonly reason?: string;
  readonly key?: string;
}

/** Starts the workflows one after another, and resolves with how each ended. */
export async function runWorkload(options: WorkloadOptions): Promise<Ending[]> {
  const run = randomUUID().slice(0, 6);
  const allEnded = new AbortController();
  const deadline = sleep(options.deadlineMs, 'deadline' as const, { signal: allEnded.signal });
  deadline.catch(() => undefined); // aborted once every workflow has ended
  return Promise.all(
    Array.from({ length: options.workflows }, async (_, index): Promise<Ending> => {
      await sleep(index * options.startEveryMs);
      const workflowId = `failover-${options.label}-${run}-${index}`;
      const requests = batch(`${run}-${index}`, options.activitiesPerWorkflow);
      const requested = [...requests.charges, ...requests.calls];
      const handle = await options.client.workflow.start('chaosBatchWorkflow', { taskQueue: options.taskQueue, workflowId, args: [requests] });
      const ended = handle.result().then(
        (receipts: VendorReceipt[]) => ({ workflowId, outcome: 'completed', receipts, requested }),
        (error: unknown) => ({ ...failed(workflowId, error), requested }),
      );
      const first = await Promise.race([ended, deadline]);
      return first === 'deadline' ? { workflowId, outcome: DID_NOT_END, receipts: [], requested } : first;
    }),
  ).finally(() => allEnded.abort());
}

function failed(workflowId: string, error: unknown): Omit<Ending, 'requested'> {
  const failure = applicationFailureIn(error);
  const { reason, key } = (failure?.details?.[0] ?? {}) as { reason?: unknown; key?: unknown };
  return {
    workflowId,
    outcome: failure?.type ?? (error instanceof Error ? error.name : String(error)),
    receipts: [],
    ...(typeof reason === 'string' ? { reason } : {}),
    ...(typeof key === 'string' ? { key } : {}),
  };
}

/** Charges and calls, each a distinct action under its own key. */
function batch(order: string, size: number): ChaosBatch {
  const calls = Math.floor(size / 5);
  return {
    charges: Array.from({ length: size - calls }, (_, i) => ({ orderId: `failover-${order}-${i}`, customerId: 'cus_failover', amountCents: 100 + i, currency: 'EUR' })),
    calls: Array.from({ length: calls }, (_, i) => ({ to: `+49${i}`, message: `order failover-${order} line ${i}` })),
  };
}
