/**
 * What the workflow interceptors and `resumable()` share, per `resumable()` call
 * (carried through awaits by AsyncLocalStorage, so two calls running at once
 * never mix): the activities the closure scheduled, in order, and, on a call
 * made again after an operator's decision, which of them is the refused one.
 * Workflow code.
 */
import { AsyncLocalStorage } from '@temporalio/workflow';

/** One activity the closure scheduled: the SDK may schedule a local activity again (after a long backoff). */
interface ScheduledActivity {
  readonly activityType: string;
  /** Every activity id it was scheduled under (a local activity gets a new one per schedule). */
  readonly activityIds: string[];
  /** The arguments array, which the SDK reuses for each schedule of one local activity call. */
  readonly args: readonly unknown[];
}

/** The refused call's key, and where the closure schedules it again: the nth activity of its type. */
export interface ResumeTarget {
  readonly key: string;
  readonly activityType: string;
  readonly ordinal: number;
}

export class ResumableCall {
  private readonly scheduled: ScheduledActivity[] = [];

  constructor(readonly target: ResumeTarget | undefined) {}

  /** Notes a scheduled activity; returns the refused key when this is the refused call made again. */
  schedule(activityType: string, activityId: string, args: readonly unknown[]): string | undefined {
    let entry = this.scheduled.find((candidate) => candidate.args === args && candidate.activityType === activityType);
    if (entry) entry.activityIds.push(activityId);
    else this.scheduled.push((entry = { activityType, activityIds: [activityId], args }));
    const { target } = this;
    return target && target.activityType === activityType && this.ordinalOf(entry) === target.ordinal ? target.key : undefined;
  }

  /** Where a refused activity sat among those of its type, to schedule the same one again. */
  ordinalOfActivity(activityType: string, activityId: string): number | undefined {
    const entry = this.scheduled.find((candidate) => candidate.activityType === activityType && candidate.activityIds.includes(activityId));
    return entry ? this.ordinalOf(entry) : undefined;
  }

  private ordinalOf(entry: ScheduledActivity): number {
    return this.scheduled.filter((candidate) => candidate.activityType === entry.activityType).indexOf(entry);
  }
}

export const resumeContext = new AsyncLocalStorage<ResumableCall>();

export const workflowState = { interceptorsInstalled: false };
