/** What a failover run's facts mean: which claims and records the promotion lost, what ran twice, what was lost. */
import type { FakeVendor } from '../../activities/fake-vendor.js';
import { CALL_ROUTE, CHARGE_ROUTE } from '../../activities/index.js';
import type { ClaimsSnapshot } from './claims-snapshot.js';
import type { FailoverReport } from './report.js';
import type { Ending } from './workload.js';

/** Claims the dead primary had and the promoted node did not; and outcomes it had recorded that the promoted node lacked. */
export function lostAtFailover(dead: ClaimsSnapshot, kept: ClaimsSnapshot): { claims: string[]; records: string[] } {
  const claims: string[] = [];
  const records: string[] = [];
  for (const [key, claim] of dead) {
    const promoted = kept.get(key);
    if (!promoted || promoted.token !== claim.token) claims.push(key);
    else if (claim.state !== 'claimed' && promoted.state === 'claimed') records.push(key);
  }
  return { claims, records };
}

/** Keys that reached the vendor again after it had taken them (none of this run's activity types is `vendorDedup`). */
export function callsTwice(vendor: FakeVendor): FailoverReport['callsTwice'] {
  return [CHARGE_ROUTE, CALL_ROUTE].flatMap((route) => [...vendor.keysSentAgain(route)].map(([key, requests]) => ({ key, requests })));
}

export function countKeysActedTwice(vendor: FakeVendor): number {
  const actions = new Map<string, number>();
  for (const { idempotencyKey } of vendor.actions) actions.set(idempotencyKey ?? 'no key', (actions.get(idempotencyKey ?? 'no key') ?? 0) + 1);
  return [...actions.values()].filter((count) => count > 1).length;
}

/**
 * Receipts completed workflows hold that are not the vendor's action on what they asked for: an action
 * never performed, or another request's (two calls answered with one record).
 */
export function lostActions(vendor: FakeVendor, endings: readonly Ending[]): FailoverReport['lostActions'] {
  const requestOf = new Map(vendor.actions.map((action) => [action.id, JSON.stringify(action.body)]));
  return endings.flatMap(({ workflowId, receipts, requested }) =>
    receipts
      .filter((receipt, index) => requestOf.get(receipt.id) !== JSON.stringify(requested[index]))
      .map((receipt) => ({ workflowId, receipt: receipt.id })),
  );
}

export function outcomeCounts(endings: readonly Ending[]): Record<string, number> {
  return countsOf(endings.map(({ outcome }) => outcome));
}

/**
 * Failed workflows by failure type and case, and whether the key refused is a record the promotion
 * lost: `IdempotencyOrphanedClaim owner-died (record lost)`.
 */
export function refusalCounts(endings: readonly Ending[], recordsLost: readonly string[]): Record<string, number> {
  return countsOf(
    endings
      .filter(({ outcome }) => outcome !== 'completed')
      .map(({ outcome, reason, key }) => [outcome, reason, key && recordsLost.includes(key) ? '(record lost)' : undefined].filter(Boolean).join(' ')),
  );
}

function countsOf(names: readonly string[]): Record<string, number> {
  return names.reduce<Record<string, number>>((counts, name) => ({ ...counts, [name]: (counts[name] ?? 0) + 1 }), {});
}
