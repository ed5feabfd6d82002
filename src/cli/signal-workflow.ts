/** Tells workflows waiting in `resumable()` that an operator decided their refused call. */
import type { Connection } from '@temporalio/client';
import { OPERATOR_DECISION_SIGNAL } from '../operator-decision.js';
import type { OperatorDecision } from '../operator-decision.js';
import type { Waiter } from '../store/index.js';
import type { TemporalTarget } from './temporal-connection.js';
import { connectTemporal, loadClient } from './temporal-client.js';
import { errorMessage } from '../error-text.js';

export type SignalOutcome =
  | { readonly waiter: Waiter; readonly delivered: true }
  /** The workflow is closed (or gone): nothing waits there any more. */
  | { readonly waiter: Waiter; readonly delivered: false; readonly closed: true; readonly error: string }
  /** Not delivered, for a reason an operator must look at (Temporal unreachable, a wrong namespace, no permission). */
  | { readonly waiter: Waiter; readonly delivered: false; readonly closed: false; readonly error: string };

/**
 * Signals each waiter (its latest run) in the namespace recorded for it, over one connection to
 * `target` (or fails every waiter with `target`'s error); never throws for one waiter's failure.
 */
export async function signalDecision(
  waiters: readonly Waiter[],
  decision: OperatorDecision,
  target: TemporalTarget | Error,
): Promise<SignalOutcome[]> {
  if (waiters.length === 0) return [];
  const failAll = (text: string) => waiters.map((waiter): SignalOutcome => ({ waiter, delivered: false, closed: false, error: text }));
  if (target instanceof Error) return failAll(errorMessage(target));
  let temporal: typeof import('@temporalio/client');
  let connection: Connection;
  try {
    temporal = await loadClient();
  } catch (error) {
    return failAll(errorMessage(error));
  }
  try {
    connection = await connectTemporal(temporal, target);
  } catch (error) {
    return failAll(errorMessage(error));
  }
  try {
    const outcomes: SignalOutcome[] = [];
    for (const waiter of waiters) {
      const client = new temporal.Client({ connection, namespace: waiter.namespace });
      try {
        await client.workflow.getHandle(waiter.workflowId).signal(OPERATOR_DECISION_SIGNAL, decision);
        outcomes.push({ waiter, delivered: true });
      } catch (error) {
        const closed = error instanceof temporal.WorkflowNotFoundError;
        outcomes.push({ waiter, delivered: false, closed, error: errorMessage(error) });
      }
    }
    return outcomes;
  } finally {
    await connection.close();
  }
}
