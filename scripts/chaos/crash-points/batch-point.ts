/**
 * Many charges at once, so the store has claims and records in flight together (four statements,
 * then batches): Postgres is held at a drawn moment (the first claim committed, or the n-th charge
 * made) and the worker killed once it has sent something the proxy dropped.
 */
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FakeVendor } from '../../../activities/fake-vendor.js';
import { before } from './crash-point.js';
import type { CrashPoint } from './crash-point.js';
import { between } from '../../../dev/seeded-random.js';

/** Long enough for a statement of the batch to be sent (records follow charges by a few ms); a run with none is not reached. */
const DROP_WAIT_MS = 2_000;

export const batchInFlight: CrashPoint = {
  id: 'batch-in-flight',
  name: 'a batch of claims in flight',
  reconcile: 'either',
  vendorLatencyMs: 60,
  charges: (random) => between(random, 6, 10),
  async crash({ victim, vendor, observations, random, signal, note }) {
    const afterActions = between(random, 0, 3);
    note(afterActions === 0 ? 'Postgres held at the first claim committed' : `Postgres held at charge ${afterActions} made`);
    const reached =
      afterActions === 0
        ? await observations.untilClaims((claims) => claims.length > 0, signal)
        : await before(signal, actions(vendor, afterActions));
    if (!reached) return false;
    victim.postgres.stall();
    // Reached only if the worker had a statement in flight when it died: one the held proxy dropped.
    const dropped = await before(signal, Promise.race([once(victim.postgres, 'dropped'), sleep(DROP_WAIT_MS).then(() => Promise.reject(new Error('nothing sent')))]));
    await victim.kill();
    return dropped;
  },
};

/** Resolves once the vendor has made `count` more charges. */
export function actions(vendor: FakeVendor, count: number): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0;
    const onAction = () => {
      if (++seen < count) return;
      vendor.off('performed', onAction);
      resolve();
    };
    vendor.on('performed', onAction);
  });
}
