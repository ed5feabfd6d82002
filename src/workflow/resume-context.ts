/**
 * What the workflow interceptors and `resumable()` share, per `resumable()` call
 * (carried through awaits by AsyncLocalStorage, so two calls running at once
 * never mix): the activities the closure scheduled, in order, and, on a pass
 * made after an operator's decision, which of them sits in the refused call's place.
 * Workflow code.
 */
import { AsyncLocalStorage } from '@temporalio/workflow';
import type { ResumeKey } from '../call-headers.js';

/** One activity the closure scheduled: the SDK may schedule a local activity again (after a long backoff). */
interface ScheduledActivity {
  readonly activityType: string;
  /** Every activity id it was scheduled under (a local activity gets a new one per schedule). */
  readonly activityIds: string[];
  /** The arguments array, which the SDK reuses for each schedule of one local activity call. */
  readonly args: readonly unknown[];
}

/** The refused call's key, and where the closure scheduled it: the nth activity of its type. */
export interface ResumeTarget {
  readonly key: string;
  readonly activityType: string;
  readonly ordinal: number;
}

export class ResumableCall {
  private readonly scheduled: ScheduledActivity[] = [];

  constructor(readonly target: ResumeTarget | undefined) {}

  /**
   * Notes a scheduled activity. On a pass after a decision, every activity gets the refused key:
   * marked `same` in the refused call's place, `other` elsewhere; the worker decides from the record.
   */
  schedule(activityType: string, activityId: string, args: readonly unknown[]): ResumeKey | undefined {
    let entry = this.scheduled.find((candidate) => candidate.args === args && candidate.activityType === activityType);
    if (entry) entry.activityIds.push(activityId);
    else this.scheduled.push((entry = { activityType, activityIds: [activityId], args }));
    const { target } = this;
    if (!target) return undefined;
    const inItsPlace = target.activityType === activityType && this.ordinalOf(entry) === target.ordinal;
    return { key: target.key, activityType: target.activityType, match: inItsPlace ? 'same' : 'other' };
  }

  /** The activity types scheduled before `activityType`'s latest call on this pass, each once. */
  earlierActivityTypes(activityType: string, args: readonly unknown[]): string[] {
    const index = this.scheduled.findIndex((candidate) => candidate.args === args && candidate.activityType === activityType);
    return [...new Set(this.scheduled.slice(0, index).map((entry) => entry.activityType))];
  }

  /** Where a refused activity sat among those of its type (the nth), to know its place on the next pass. */
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
