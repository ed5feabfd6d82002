/**
 * How an operator's decision reaches a workflow waiting on a refusal: the CLI
 * signals it, `resumable()` in the workflow waits for it. Shared names only,
 * so both the CLI and sandboxed workflow code can import this file.
 */
export const OPERATOR_DECISION_SIGNAL = 'temporal-idempotency.decision';
export const PENDING_REFUSALS_QUERY = 'temporal-idempotency.pending';

export interface OperatorDecision {
  readonly key: string;
  /** `resolved`: it happened, the claim now holds its result. `released`: it did not, the claim is gone. */
  readonly decision: 'resolved' | 'released';
}
