/**
 * The example workflow: charge a card, then place a confirmation call.
 * Both are external writes a customer would notice twice.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { ChargeRequest, ExampleActivities, VendorReceipt } from '../activities/index.js';

export interface OrderInput {
  readonly charge: ChargeRequest;
  readonly phone: string;
  /** Short in tests and the demo, so a killed worker's attempt times out quickly. */
  readonly activityTimeoutMs?: number;
}

export interface OrderResult {
  readonly charge: VendorReceipt;
  readonly call: VendorReceipt;
}

export async function orderWorkflow(input: OrderInput): Promise<OrderResult> {
  const { chargeCard, placeCall } = proxyActivities<ExampleActivities>({
    startToCloseTimeout: input.activityTimeoutMs ?? 60_000,
    retry: { initialInterval: 200, backoffCoefficient: 2, maximumInterval: 2_000, maximumAttempts: 10 },
  });
  const charge = await chargeCard(input.charge);
  const call = await placeCall({
    to: input.phone,
    message: `Your order ${input.charge.orderId} is confirmed (charge ${charge.id}).`,
  });
  return { charge, call };
}
