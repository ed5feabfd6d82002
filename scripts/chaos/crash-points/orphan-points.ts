/**
 * Moments after a first kill, in the attempt that finds the orphaned claim: taking it over, and
 * asking the vendor about it. Both need a reconciler (without one an orphan is refused, not taken
 * over). The second worker is killed too; a fresh one then finishes.
 */
import { LOOKUP_ROUTE } from '../../../activities/fake-vendor.js';
import { before } from './crash-point.js';
import type { CrashPoint } from './crash-point.js';
import { killAfterTheVendor } from './first-kill.js';

export const duringTakeover: CrashPoint = {
  id: 'takeover',
  name: 'during a takeover',
  reconcile: 'on',
  async crash(context) {
    if (!(await killAfterTheVendor(context))) return false;
    // Its question never reaches the vendor, so the kill lands after the takeover and before any answer.
    const taker = await context.spawnWorker({ vendorStalled: true });
    const taken = await context.observations.untilClaims((claims) => claims.some((claim) => claim.claimedBy === taker.name), context.signal);
    if (!taken) return false;
    await taker.kill();
    return true;
  },
};

export const duringReconcile: CrashPoint = {
  id: 'reconcile',
  name: 'during reconcile',
  reconcile: 'on',
  async crash(context) {
    const asked = context.vendor.nextHeld(LOOKUP_ROUTE);
    context.vendor.script(LOOKUP_ROUTE, 'hang-before-performing');
    if (!(await killAfterTheVendor(context))) return false;
    const asker = await context.spawnWorker();
    if (!(await before(context.signal, asked))) return false;
    await asker.kill();
    return true;
  },
};
