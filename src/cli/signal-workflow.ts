/** Tells a workflow waiting in `resumable()` that an operator decided its refused call. */
import { OPERATOR_DECISION_SIGNAL } from '../operator-decision.js';
import type { OperatorDecision } from '../operator-decision.js';

export async function signalDecision(target: { workflowId: string; namespace: string }, decision: OperatorDecision): Promise<void> {
  const { Client, Connection } = await loadClient();
  const connection = await Connection.connect({
    address: process.env['TEMPORAL_ADDRESS'] ?? 'localhost:7233',
    connectTimeout: 5_000,
  });
  try {
    const client = new Client({ connection, namespace: process.env['TEMPORAL_NAMESPACE'] ?? target.namespace });
    await client.workflow.getHandle(target.workflowId).signal(OPERATOR_DECISION_SIGNAL, decision);
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
    if ((error as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw error;
    throw new Error('@temporalio/client is not installed; add it to the project to let the CLI signal workflows', { cause: error });
  }
}
