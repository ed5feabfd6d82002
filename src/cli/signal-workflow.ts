/** Tells a workflow waiting in `resumable()` that an operator decided its refused call. */
import { Client, Connection } from '@temporalio/client';
import { OPERATOR_DECISION_SIGNAL } from '../operator-decision.js';
import type { OperatorDecision } from '../operator-decision.js';

export async function signalDecision(target: { workflowId: string; namespace: string }, decision: OperatorDecision): Promise<void> {
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
