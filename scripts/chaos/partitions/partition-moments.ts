/** A moment of a partition run observed from Temporal: the activity retried on another worker. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

/**
 * Polls the workflow until one of its activities runs a later attempt than its first on a worker
 * other than the process `pid` (the SDK names a worker `<pid>@<host>`); false when `signal` ends the wait.
 */
export async function untilRetriedElsewhere(handle: WorkflowHandle, pid: number, signal: AbortSignal): Promise<boolean> {
  while (!signal.aborted) {
    const { raw } = await handle.describe();
    const retried = (raw.pendingActivities ?? []).some(
      (activity) =>
        (activity.attempt ?? 0) >= 2 &&
        activity.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED &&
        !(activity.lastWorkerIdentity ?? '').startsWith(`${pid}@`),
    );
    if (retried) return true;
    await sleep(100);
  }
  return false;
}
