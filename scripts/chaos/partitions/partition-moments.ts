/** A moment of a partition run observed from Temporal: the activity retried on another worker. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { WorkflowHandle } from '@temporalio/client';
// A CommonJS module: its namespace comes whole under ESM.
import proto from '@temporalio/proto';

const STARTED = proto.temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;

/**
 * Polls the workflow until one of its activities ran a later attempt than its first on a worker other
 * than the process `pid` (the SDK names a worker `<pid>@<host>`): pending and started there, or already
 * closed (its history then records the attempt that started); false when `signal` ends the wait.
 */
export async function untilRetriedElsewhere(handle: WorkflowHandle, pid: number, signal: AbortSignal): Promise<boolean> {
  const elsewhere = (attempt: number | null | undefined, identity: string | null | undefined) => (attempt ?? 0) >= 2 && !(identity ?? '').startsWith(`${pid}@`);
  while (!signal.aborted) {
    const { raw } = await handle.describe();
    if ((raw.pendingActivities ?? []).some((activity) => activity.state === STARTED && elsewhere(activity.attempt, activity.lastWorkerIdentity))) return true;
    const { events } = await handle.fetchHistory();
    if ((events ?? []).some(({ activityTaskStartedEventAttributes: started }) => started && elsewhere(started.attempt, started.identity))) return true;
    await sleep(100);
  }
  return false;
}
