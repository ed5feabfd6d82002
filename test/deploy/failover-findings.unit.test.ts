/**
 * What the failover run counts as a lost action: a completed workflow's receipt that is not the vendor's
 * action on what that workflow asked for. Found in review: any action's receipt passed, so two orders
 * answered with one charge (a key collision) counted as nothing lost.
 */
import { describe, expect, it } from 'vitest';
import { FakeVendor } from '../../activities/fake-vendor.js';
import { lostActions } from '../../scripts/failover/findings.js';
import type { Ending } from '../../scripts/failover/workload.js';

const charge = (orderId: string) => ({ orderId, customerId: 'cus_1', amountCents: 100, currency: 'EUR' });

function vendorThatCharged(...orders: string[]): FakeVendor {
  const vendor = new FakeVendor();
  orders.forEach((orderId, index) =>
    vendor.actions.push({ route: 'POST /v1/charges', id: `act_${index + 1}`, body: charge(orderId), at: new Date(), idempotencyKey: `key-${orderId}` }),
  );
  return vendor;
}

const completed = (workflowId: string, orderId: string, receipt: string): Ending => ({
  workflowId,
  outcome: 'completed',
  receipts: [{ id: receipt, status: 'done' }],
  requested: [charge(orderId)],
});

describe('a lost action after a failover', () => {
  it('is none when each completed workflow holds the receipt of its own charge', () => {
    expect(lostActions(vendorThatCharged('A', 'B'), [completed('wf-a', 'A', 'act_1'), completed('wf-b', 'B', 'act_2')])).toEqual([]);
  });

  it("is a workflow answered with another order's charge, its own never made", () => {
    expect(lostActions(vendorThatCharged('A'), [completed('wf-a', 'A', 'act_1'), completed('wf-b', 'B', 'act_1')])).toEqual([{ workflowId: 'wf-b', receipt: 'act_1' }]);
  });

  it('is a receipt for an action the vendor never performed', () => {
    expect(lostActions(vendorThatCharged('A'), [completed('wf-a', 'A', 'act_9')])).toEqual([{ workflowId: 'wf-a', receipt: 'act_9' }]);
  });
});
