/** Tells workflows waiting in `resumable()` that an operator decided their refused call. */
import type { Connection } from '@temporalio/client';
import { OPERATOR_DECISION_SIGNAL } from '../operator-decision.js';
import type { OperatorDecision } from '../operator-decision.js';
import type { Waiter } from '../store/index.js';

export interface SignalOutcome {
  readonly waiter: Waiter;
  /** Null when the signal was delivered. */
  readonly error: string | null;
}

/** Signals each waiter (its latest run), one connection for all; never throws for one waiter's failure. */
export async function signalDecision(waiters: readonly Waiter[], decision: OperatorDecision): Promise<SignalOutcome[]> {
  if (waiters.length === 0) return [];
  let temporal: typeof import('@temporalio/client');
  let connection: Connection;
  try {
    temporal = await loadClient();
  } catch (error) {
    return waiters.map((waiter) => ({ waiter, error: (error as Error).message }));
  }
  try {
    connection = await temporal.Connection.connect({ address: process.env['TEMPORAL_ADDRESS'] ?? 'localhost:7233', connectTimeout: 5_000 });
  } catch (error) {
    const text = `cannot connect to Temporal at ${process.env['TEMPORAL_ADDRESS'] ?? 'localhost:7233'}: ${(error as Error).message}`;
    return waiters.map((waiter) => ({ waiter, error: text }));
  }
  try {
    const outcomes: SignalOutcome[] = [];
    for (const waiter of waiters) {
      const client = new temporal.Client({ connection, namespace: process.env['TEMPORAL_NAMESPACE'] ?? waiter.namespace });
      try {
        await client.workflow.getHandle(waiter.workflowId).signal(OPERATOR_DECISION_SIGNAL, decision);
        outcomes.push({ waiter, error: null });
      } catch (error) {
        outcomes.push({ waiter, error: (error as Error).message });
      }
    }
    return outcomes;
  } finally {
    await connection.close();
  }
}

/**
 * @temporalio/client is an optional peer dependency: only this signal needs it,
 * so every other command works in a project that does not have it.
 */
async function loadClient(): Promise<typeof import('@temporalio/client')> {
  try {
    return await import('@temporalio/client');
  } catch (error) {
    // The CLI is compiled to CommonJS, where this import() is a require(): MODULE_NOT_FOUND.
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'MODULE_NOT_FOUND' && code !== 'ERR_MODULE_NOT_FOUND') throw error;
    throw new Error('@temporalio/client is not installed; add it to the project to let the CLI signal workflows', { cause: error });
  }
}
