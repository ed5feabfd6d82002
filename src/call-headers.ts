/**
 * Activity headers the workflow interceptors (temporal-idempotency/workflow-interceptors)
 * attach and the activity interceptor reads. Names and shapes only, so both the
 * workflow sandbox and the worker can import this file.
 */

/**
 * On every activity `resumable()` schedules on a pass after an operator's decision: the refused
 * call's key and type, and whether this call sits in the refused call's place. The refused key's
 * record decides for the call in that place (resolved: answered from it; released: it runs; neither:
 * refused again), even when it has a new activity id; its arguments must be the refused call's.
 */
export const RESUME_KEY_HEADER = 'temporal-idempotency-resume-key';

/**
 * `same`: the call is in the refused call's place (the nth activity of the refused type that the
 * closure scheduled), so it is the refused call made again, if its arguments are the refused call's
 * (the record's fingerprint says so; otherwise it is refused, never keyed afresh or answered with
 * another action's result). `other`: any other activity of the pass, keyed as its own; under `call`
 * scope it would get a new key on each pass and run again, so it is refused.
 */
export type ResumeMatch = 'same' | 'other';

export interface ResumeKey {
  readonly key: string;
  /** The refused call's activity type. */
  readonly activityType: string;
  readonly match: ResumeMatch;
}

/**
 * On an activity `resumable()` schedules after others in the same closure: their activity types, so a
 * worker can refuse a `call`-scoped write beside other writes on the first pass already, not only when
 * a pass after an operator's decision would call it again under a new key.
 */
export const RESUMABLE_EARLIER_HEADER = 'temporal-idempotency-resumable-earlier';

export interface ResumableEarlier {
  /** The activity types the closure scheduled before this one on this pass, each once, in order. */
  readonly activityTypes: readonly string[];
}

export function isResumableEarlier(value: unknown): value is ResumableEarlier {
  const candidate = value as Partial<ResumableEarlier> | null;
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    Array.isArray(candidate.activityTypes) &&
    candidate.activityTypes.every((activityType) => typeof activityType === 'string')
  );
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
    typeof candidate.activityType === 'string' &&
    (candidate.match === 'same' || candidate.match === 'other')
  );
}
