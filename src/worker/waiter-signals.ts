/**
 * Tells the workflows refused on a key that its claim was settled, as an
 * operator's `resolve` or `release` would: the decision signal `resumable()`
 * waits for. This is how a workflow refused while the owner was only paused
 * (its lease lapsed, or it ran past its deadline) goes on once that owner
 * records its result late (answered from the record) or releases its claim
 * after a definite error (called again), instead of waiting for someone to
 * notice and run `resume`.
 */
import type { Context } from '@temporalio/activity';
import { OPERATOR_DECISION_SIGNAL } from '../operator-decision.js';
import type { OperatorDecision } from '../operator-decision.js';
import type { ClaimStore, HeldClaim, Waiter } from '../store/index.js';
import { errorMessage } from '../error-text.js';

/**
 * Best effort, after the caller's own result was recorded: a waiter it cannot tell (another namespace,
 * no client, Temporal unreachable) stays on record as not told, for `temporal-idempotency resume KEY`.
 */
export async function tellWaitersOfOutcome(
  context: Context,
  store: ClaimStore,
  claim: HeldClaim,
  outcome: OperatorDecision['decision'],
): Promise<void> {
  if (!store.waitersToTell) return;
  let waiters: readonly Waiter[];
  try {
    waiters = await store.waitersToTell(claim);
  } catch (error) {
    leftForOperator(context, claim, outcome, `could not read who waits on the key (${errorMessage(error)})`);
    return;
  }
  if (waiters.length === 0) return;
  const namespace = context.info.activityNamespace;
  const reachable = waiters.filter((waiter) => waiter.namespace === namespace);
  if (reachable.length < waiters.length) leftForOperator(context, claim, outcome, `workflows wait on it in other namespaces than ${namespace}`);
  // As an operator's: `resolved`, answered from the record; `released`, the call runs for real.
  const decision: OperatorDecision = { key: claim.key, decision: outcome };
  const told: Waiter[] = [];
  for (const waiter of reachable) {
    try {
      // The latest run: a workflow that continued as new waits there, if anywhere.
      await context.client.workflow.getHandle(waiter.workflowId).signal(OPERATOR_DECISION_SIGNAL, decision);
      told.push(waiter);
      context.log.info(`Idempotency: told a workflow refused on this key that it was ${outcome}`, {
        idempotencyKey: claim.key,
        workflowId: waiter.workflowId,
      });
    } catch (error) {
      // Closed: nothing waits there any more, and a reset starts from the record anyway.
      if (error instanceof Error && error.name === 'WorkflowNotFoundError') told.push(waiter);
      else leftForOperator(context, claim, outcome, `signalling workflow ${waiter.workflowId} failed (${errorMessage(error)})`);
    }
  }
  await store.waitersTold?.(claim.key, told).catch((error: unknown) =>
    context.log.warn('Idempotency: could not note the waiters told of the outcome; `resume` would tell them again', {
      idempotencyKey: claim.key,
      error: errorMessage(error),
    }),
  );
}

function leftForOperator(context: Context, claim: HeldClaim, outcome: OperatorDecision['decision'], why: string): void {
  // A released key has no row left, so `resume` would not know it was released; `release-absent` says so and tells them.
  const next =
    outcome === 'resolved'
      ? `run \`temporal-idempotency resume ${claim.key}\``
      : `run \`temporal-idempotency release-absent ${claim.key} --reason "released by its owner's worker"\``;
  context.log.error(`Idempotency: the key's claim was ${outcome} by this attempt, but ${why}; ${next}`, {
    idempotencyKey: claim.key,
  });
}
