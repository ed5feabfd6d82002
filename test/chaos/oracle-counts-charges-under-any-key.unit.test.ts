/**
 * Found in review: the chaos run's oracle (6d90491) counts second calls per idempotency key only, so a
 * second charge that carries another key goes unreported.
 *
 * The chaos report fails a run when a key was acted on twice (`keysActedTwice`) or sent again after
 * the vendor took it (`keysSentTwice`, `FakeVendor.keysSentAgain`). Every charge in a chaos batch
 * is a distinct order, so the vendor acting more often than there were activities IS a doubled call,
 * whatever keys it came with; but `problemsIn` never compares the vendor's actions with the number of
 * activities, nor counts actions per order. A regression that re-derives the key on a retry (a key
 * that takes in the attempt, the run, a timestamp, or a key format change lost on one worker) charges
 * every retried order twice and the run prints "Every key at most once; every workflow completed or
 * refused by name." Below: the real FakeVendor receives what such a run sends (one order, two
 * attempts, two keys), and the report is made from it as chaos.ts's `report()` makes it.
 * No services.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeVendor } from '../../activities/fake-vendor.js';
import { CHARGE_ROUTE } from '../../activities/index.js';
import { problemsIn, repeatedActions } from '../../scripts/chaos/report.js';
import type { ChaosReport } from '../../scripts/chaos/report.js';

const vendor = new FakeVendor();
beforeAll(() => vendor.start());
afterAll(() => vendor.stop());

async function charge(orderId: string, key: string): Promise<void> {
  const response = await fetch(new URL('/v1/charges', vendor.url), {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify({ orderId, customerId: 'cus_chaos', amountCents: 100, currency: 'EUR' }),
  });
  await response.text();
}

describe('the chaos report and a second charge under another key', () => {
  it('fails a run in which the vendor charged one order twice', async () => {
    // One activity (one order); its retry carried a key of its own.
    await charge('chaos-0-abc-0', 'key-of-attempt-1');
    await charge('chaos-0-abc-0', 'key-of-attempt-2');
    expect(vendor.actionsOn(CHARGE_ROUTE)).toHaveLength(2); // the customer was charged twice

    // As chaos.ts's report() assembles it.
    const actionsByKey = new Map<string, number>();
    for (const action of vendor.actions) actionsByKey.set(action.idempotencyKey ?? 'no key', (actionsByKey.get(action.idempotencyKey ?? 'no key') ?? 0) + 1);
    const report: ChaosReport = {
      activities: 1,
      workflows: 1,
      kills: 1,
      postgresRestarts: 2,
      postgresRestartsWanted: 2,
      postgresRestartsImpossible: null,
      seconds: 30,
      keysActedOnce: [...actionsByKey.values()].filter((count) => count === 1).length,
      keysActedTwice: [...actionsByKey].filter(([, count]) => count > 1).map(([key, actions]) => ({ key, actions })),
      keysSentTwice: [...vendor.keysSentAgain(CHARGE_ROUTE)].map(([key, requests]) => ({ key, route: CHARGE_ROUTE, requests })),
      actionsRepeated: repeatedActions(vendor.actions),
      vendorReplays: vendor.log.filter((request) => request.handling === 'replayed').length,
      outcomes: { completed: 1 },
      openClaims: [],
      reconcile: false,
      reconciliations: {},
      unexpectedExits: [],
    };
    // Before a fix: [] ("Every key at most once; every workflow completed or refused by name.").
    expect(problemsIn(report)).toEqual([expect.stringMatching(/^POST \/v1\/charges \{"orderId":"chaos-0-abc-0".*\} was acted on 2 times$/)]);
  });
});
