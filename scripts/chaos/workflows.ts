/** Workflows the chaos runs drive: the example's, a fan-out of distinct external writes, and the crash-point runs' charges. */
import { proxyActivities } from '@temporalio/workflow';
import { resumable } from '../../src/workflow/index.js';
import type { CallRequest, ChargeRequest, ExampleActivities, VendorReceipt } from '../../activities/index.js';

export { orderWorkflow } from '../../workflows/index.js';

export interface ChaosBatch {
  readonly charges: readonly ChargeRequest[];
  readonly calls: readonly CallRequest[];
}

/** Charges and calls in parallel: each a separate key, each to happen at most once. */
export async function chaosBatchWorkflow(batch: ChaosBatch): Promise<VendorReceipt[]> {
  const { chargeCard, placeCall } = proxyActivities<ExampleActivities>({
    startToCloseTimeout: '3s',
    retry: { initialInterval: 200, backoffCoefficient: 1.5, maximumInterval: 1_000, maximumAttempts: 40 },
  });
  return Promise.all([...batch.charges.map((charge) => chargeCard(charge)), ...batch.calls.map((call) => placeCall(call))]);
}

export interface CrashPointBatch {
  readonly charges: readonly ChargeRequest[];
  /** Wrap each charge in `resumable()`: a refusal waits for a person's decision instead of failing the workflow. */
  readonly waitForPerson: boolean;
  /**
   * Where the charges run: the killed workers serve only activities, so a workflow task is never
   * held for a dead worker's sticky queue (ten seconds each time) while the kills are what is tested.
   */
  readonly activityTaskQueue: string;
}

/**
 * The crash-point runs' workflow: charges in parallel, each its own key. Three-second attempts, so a
 * killed worker's attempt times out and is retried on a fresh worker within seconds.
 */
export async function crashPointWorkflow(batch: CrashPointBatch): Promise<VendorReceipt[]> {
  const { chargeCard } = proxyActivities<ExampleActivities>({
    taskQueue: batch.activityTaskQueue,
    startToCloseTimeout: '3s',
    retry: { initialInterval: 200, backoffCoefficient: 1.5, maximumInterval: 1_000, maximumAttempts: 40 },
  });
  return Promise.all(batch.charges.map((charge) => (batch.waitForPerson ? resumable(() => chargeCard(charge)) : chargeCard(charge))));
}
