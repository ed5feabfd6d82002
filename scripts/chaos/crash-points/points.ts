/** The crash points, in the order of an attempt. */
import { claimCommitted, recordCommitted, requestArrived, vendorActed, vendorAnswered } from './attempt-points.js';
import { batchInFlight } from './batch-point.js';
import type { CrashPoint } from './crash-point.js';
import { operatorResolve } from './operator-point.js';
import { duringReconcile, duringTakeover } from './orphan-points.js';

export const CRASH_POINTS: readonly CrashPoint[] = [
  claimCommitted,
  requestArrived,
  vendorActed,
  vendorAnswered,
  recordCommitted,
  duringTakeover,
  duringReconcile,
  operatorResolve,
  batchInFlight,
];
