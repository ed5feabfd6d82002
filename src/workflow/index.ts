/**
 * Workflow-side helpers, safe for the workflow sandbox: import from
 * `temporal-idempotency/workflow` in workflow code.
 */
export { operatorDecisionSignal, pendingRefusalsQuery, resumable } from './resumable.js';
export type { PendingRefusal } from './resumable.js';
export type { OperatorDecision } from '../operator-decision.js';
export { IdempotencyClaimBusy, IdempotencyKeyReuse, IdempotencyOrphanedClaim } from '../failure-types.js';
