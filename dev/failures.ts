import { ApplicationFailure, WorkflowFailedError } from '@temporalio/client';

/**
 * The ApplicationFailure a failed workflow's error carries: wrapped in an
 * ActivityFailure for an activity, sometimes directly for a local one.
 */
export function applicationFailureIn(error: unknown): ApplicationFailure | undefined {
  if (!(error instanceof WorkflowFailedError)) return undefined;
  for (let cause: unknown = error.cause; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof ApplicationFailure) return cause;
  }
  return undefined;
}
