/**
 * What the workflow interceptors and `resumable()` share: which refused call is
 * being made again (carried through awaits by AsyncLocalStorage, so two
 * resumed calls running at once never swap keys) and whether the interceptors
 * are installed at all. Workflow code.
 */
import { AsyncLocalStorage } from '@temporalio/workflow';

export interface ResumedCall {
  readonly key: string;
  readonly activityType: string;
  /**
   * The arguments of the activity that got the header: later activities in the same call are other
   * actions, except a local activity scheduled again (after a backoff) with these very arguments.
   */
  args: readonly unknown[] | undefined;
}

export const resumeContext = new AsyncLocalStorage<ResumedCall>();

export const workflowState = { interceptorsInstalled: false };
