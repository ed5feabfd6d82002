/**
 * Moments after a first kill, in the attempt that finds the orphaned claim: taking it over, and
 * asking the vendor about it. Both need a reconciler (without one an orphan is refused, not taken
 * over). The second worker is killed too; a fresh one then finishes.
 */
import { LOOKUP_ROUTE } from '../../../activities/fake-vendor.js';
import { CHARGE_ROUTE } from '../../../activities/index.js';
import { before } from './crash-point.js';
import type { CrashContext, CrashPoint } from './crash-point.js';

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

/** The first kill: drawn from the run's seed, before the vendor acted (it holds the request) or after (it never answers). */
async function killAfterTheVendor({ victim, vendor, random, signal, note }: CrashContext): Promise<boolean> {
  const acted = random() < 0.5;
  note(acted ? 'first kill after the vendor acted' : 'first kill before the vendor acted');
  vendor.script(CHARGE_ROUTE, acted ? 'hang-after-performing' : 'hang-before-performing');
  if (!(await before(signal, acted ? vendor.nextAction(CHARGE_ROUTE) : vendor.nextHeld(CHARGE_ROUTE)))) return false;
  await victim.kill();
  return true;
}
