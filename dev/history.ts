import type { WorkflowHandle } from '@temporalio/client';

/**
 * When the workflow's history recorded its first failed activity, by the
 * server's clock: the moment of a refusal (the workflow itself fails later,
 * once a worker runs its next workflow task).
 */
export async function activityFailedAt(handle: WorkflowHandle): Promise<number> {
  const history = await handle.fetchHistory();
  const time = history.events?.find((event) => event.activityTaskFailedEventAttributes != null)?.eventTime;
  if (!time) throw new Error(`no ActivityTaskFailed event in the history of ${handle.workflowId}`);
  return Number(time.seconds) * 1000 + Math.floor((time.nanos ?? 0) / 1e6);
}
