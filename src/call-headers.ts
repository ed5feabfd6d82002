/**
 * Activity headers the workflow interceptors (temporal-idempotency/workflow-interceptors)
 * attach and the activity interceptor reads. Names and shapes only, so both the
 * workflow sandbox and the worker can import this file.
 */

/**
 * On the call `resumable()` makes after an operator's decision: the refused call's key, so
 * the record decides (resolved: answered from it; released: runs; neither: refused again)
 * even when the new call has a new activity id or freshly built arguments.
 */
export const RESUME_KEY_HEADER = 'temporal-idempotency-resume-key';

export interface ResumeKey {
  readonly key: string;
  /** The refused call's activity type; the header is honoured only by a call of that type. */
  readonly activityType: string;
}

/** On every activity a cron workflow schedules: its schedule, so `workflow` scope can warn. */
export const CRON_SCHEDULE_HEADER = 'temporal-idempotency-cron-schedule';

export function isResumeKey(value: unknown): value is ResumeKey {
  const candidate = value as Partial<ResumeKey> | null;
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    typeof candidate.key === 'string' &&
    /^[0-9a-f]{64}$/.test(candidate.key) &&
    typeof candidate.activityType === 'string'
  );
}
