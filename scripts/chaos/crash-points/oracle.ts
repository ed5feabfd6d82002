/**
 * The verdict on one crash-point run. Every charge is a distinct order, so the vendor charging an
 * order twice is a double call whatever keys it came with; so is a key sent again after the vendor
 * took it (this vendor's dedup hid it; one without keys would have charged again). A workflow told
 * "done" must hold, for each order, the receipt of the vendor's one charge of it.
 */
import type { RunFacts } from './run-facts.js';

export interface RunVerdict {
  readonly doubleCalls: number;
  readonly lostActions: number;
  readonly refusals: number;
  readonly reconciled: number;
  /** Not completed and not refused by name after the bounded wait (or failed another way). */
  readonly open: number;
}

export function judge(facts: RunFacts): RunVerdict {
  return {
    doubleCalls: doubledOrders(facts).size,
    lostActions: lostActions(facts),
    refusals: facts.refusals,
    reconciled: facts.reconciliations.filter((answer) => answer === 'happened' || answer === 'not-happened').length,
    open: facts.outcome.kind === 'open' || facts.outcome.kind === 'failed' ? 1 : 0,
  };
}

/** Orders the vendor charged more than once, or whose key reached it again; keys it never charged count on their own. */
function doubledOrders(facts: RunFacts): Set<string> {
  const doubled = new Set<string>();
  const chargesPerOrder = new Map<string, number>();
  for (const { orderId } of facts.actions) chargesPerOrder.set(orderId, (chargesPerOrder.get(orderId) ?? 0) + 1);
  for (const [orderId, charges] of chargesPerOrder) if (charges > 1) doubled.add(orderId);
  for (const key of facts.keysSentAgain) doubled.add(facts.actions.find((action) => action.key === key)?.orderId ?? `key ${key}`);
  return doubled;
}

/** Orders of a completed workflow whose receipt is not the vendor's charge of that order (or that it never charged). */
function lostActions(facts: RunFacts): number {
  if (facts.outcome.kind !== 'completed') return 0;
  const { receipts } = facts.outcome;
  return facts.orderIds.filter((orderId, index) => {
    const charge = facts.actions.find((action) => action.orderId === orderId);
    return !charge || receipts[index]?.id !== charge.id;
  }).length;
}
