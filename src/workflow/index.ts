/**
 * Workflow-side helpers, safe for the workflow sandbox: import from
 * `temporal-idempotency/workflow` in workflow code.
 */
export { resumable } from './resumable.js';
export { operatorDecisionSignal, pendingRefusalsQuery } from './definitions.js';
export type { PendingRefusal } from './decisions.js';
export type { OperatorDecision } from '../operator-decision.js';
export { OPERATOR_DECISION_SIGNAL, PENDING_REFUSALS_QUERY } from '../operator-decision.js';
export { idempotencyRefusalOf, isIdempotencyRefusal } from './refusal-matching.js';
export * from '../failure-types.js';
