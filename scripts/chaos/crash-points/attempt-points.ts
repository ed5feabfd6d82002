/**
 * The moments of one attempt, each reached from outside the worker: by its claim showing in
 * Postgres, by what the vendor receives and does, and by holding the worker's own connections
 * (Postgres, Temporal) in its proxies just before the moment, so the kill lands inside it.
 */
import { once } from 'node:events';
import { CHARGE_ROUTE } from '../../../activities/index.js';
import { before } from './crash-point.js';
import type { CrashPoint } from './crash-point.js';

export const claimCommitted: CrashPoint = {
  id: 'claim-committed',
  name: 'claim committed',
  reconcile: 'either',
  async crash({ victim, observations, signal }) {
    // Nothing the worker sends reaches the vendor: the kill lands between the claim's commit and the call.
    victim.vendor.stall();
    if (!(await observations.untilClaims((claims) => claims.length > 0, signal))) return false;
    await victim.kill();
    return true;
  },
};

export const requestArrived: CrashPoint = {
  id: 'request-arrived',
  name: 'body sent, vendor not acted',
  reconcile: 'either',
  async crash({ victim, vendor, signal }) {
    vendor.script(CHARGE_ROUTE, 'hang-before-performing');
    if (!(await before(signal, vendor.nextHeld(CHARGE_ROUTE)))) return false;
    await victim.kill();
    return true;
  },
};

export const vendorActed: CrashPoint = {
  id: 'vendor-acted',
  name: 'vendor acted, not answered',
  reconcile: 'either',
  async crash({ victim, vendor, signal }) {
    vendor.script(CHARGE_ROUTE, 'hang-after-performing');
    if (!(await before(signal, vendor.nextAction(CHARGE_ROUTE)))) return false;
    await victim.kill();
    return true;
  },
};

export const vendorAnswered: CrashPoint = {
  id: 'vendor-answered',
  name: 'vendor answered, record not written',
  reconcile: 'either',
  async crash({ victim, vendor, signal }) {
    if (!(await before(signal, vendor.nextAction(CHARGE_ROUTE)))) return false;
    // Held before the answer leaves the vendor: what the worker then sends to Postgres (the record) is dropped.
    victim.postgres.stall();
    if (!(await before(signal, once(victim.postgres, 'dropped')))) return false;
    await victim.kill();
    return true;
  },
};

export const recordCommitted: CrashPoint = {
  id: 'record-committed',
  name: 'record committed, Temporal not told',
  reconcile: 'either',
  async crash({ victim, vendor, observations, signal }) {
    if (!(await before(signal, vendor.nextAction(CHARGE_ROUTE)))) return false;
    // Held before the answer leaves the vendor: the activity's completion never reaches Temporal.
    victim.temporal.stall();
    if (!(await observations.untilClaims((claims) => claims.every((claim) => claim.state === 'completed'), signal))) return false;
    await victim.kill();
    return true;
  },
};
