/** Workflows the chaos run drives: the example's, plus a fan-out of distinct external writes. */
import { proxyActivities } from '@temporalio/workflow';
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
