/** The first kill of the points that go on after it (takeover, reconcile, an operator's decision). */
import { CHARGE_ROUTE } from '../../../activities/index.js';
import { before } from './crash-point.js';
import type { CrashContext } from './crash-point.js';

/** The first kill: drawn from the run's seed, before the vendor acted (it holds the request) or after (it never answers). */
export async function killAfterTheVendor({ victim, vendor, random, signal, note }: CrashContext): Promise<boolean> {
  const acted = random() < 0.5;
  note(acted ? 'first kill after the vendor acted' : 'first kill before the vendor acted');
  vendor.script(CHARGE_ROUTE, acted ? 'hang-after-performing' : 'hang-before-performing');
  if (!(await before(signal, acted ? vendor.nextAction(CHARGE_ROUTE) : vendor.nextHeld(CHARGE_ROUTE)))) return false;
  await victim.kill();
  return true;
}
