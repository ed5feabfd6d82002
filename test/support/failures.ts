/** Digs the ApplicationFailure an activity ended with out of a failed workflow's error. */
import { ApplicationFailure, WorkflowFailedError } from '@temporalio/client';

export async function activityFailureOf(result: Promise<unknown>): Promise<ApplicationFailure> {
  const error = await result.then(
    (value) => {
      throw new Error(`expected the workflow to fail, it returned ${JSON.stringify(value)}`);
    },
    (error: unknown) => error,
  );
  if (!(error instanceof WorkflowFailedError)) throw new Error(`expected a failed workflow, got ${String(error)}`, { cause: error });
  // An activity's failure arrives wrapped in an ActivityFailure; a local activity's sometimes directly.
  for (let cause: unknown = error.cause; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof ApplicationFailure) return cause;
  }
  throw new Error(`expected an ApplicationFailure in the workflow's failure chain, got ${String(error.cause)}`, { cause: error });
}
