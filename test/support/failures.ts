/** Digs the ApplicationFailure an activity ended with out of a failed workflow's result. */
import type { ApplicationFailure } from '@temporalio/client';
import { applicationFailureIn } from '../../dev/failures.js';

export async function activityFailureOf(result: Promise<unknown>): Promise<ApplicationFailure> {
  const error = await result.then(
    (value) => {
      throw new Error(`expected the workflow to fail, it returned ${JSON.stringify(value)}`);
    },
    (error: unknown) => error,
  );
  const failure = applicationFailureIn(error);
  if (!failure) throw new Error(`expected a workflow failed by an ApplicationFailure, got ${String(error)}`, { cause: error });
  return failure;
}
