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
import type { Logger } from '@temporalio/common';
import { OPERATOR_DECISION_SIGNAL } from '../operator-decision.js';
import type { OperatorDecision } from '../operator-decision.js';
import type { ClaimStore, HeldClaim, Waiter } from '../store/index.js';
import { errorMessage } from '../error-text.js';

/** Who tells: the worker's client (read only when there is someone to tell), its namespace, and where to log. */
export interface WaiterTeller {
  readonly client: () => Context['client'];
  readonly namespace: string;
  readonly log: Logger;
}

/** The running activity's worker, as a teller. */
export function tellerOf(context: Context): WaiterTeller {
  return { client: () => context.client, namespace: context.info.activityNamespace, log: context.log };
}

/**
 * Best effort, after `claim` was settled: a waiter it cannot tell (another namespace, no client,
 * Temporal unreachable) stays on record as not told, for the operator's command it logs.
 */
export async function tellWaitersOfOutcome(
  teller: WaiterTeller,
  store: ClaimStore,
  claim: HeldClaim,
  outcome: OperatorDecision['decision'],
): Promise<void> {
  let waiters: readonly Waiter[];
  try {
    waiters = await store.waitersToTell(claim);
  } catch (error) {
    leftForOperator(teller, claim, outcome, `could not read who waits on the key (${errorMessage(error)})`);
    return;
  }
  const elsewhere = new Set(waiters.filter((waiter) => waiter.namespace !== teller.namespace).map((waiter) => waiter.namespace));
  for (const namespace of elsewhere) {
    leftForOperator(teller, claim, outcome, `workflows wait on it in namespace ${namespace}, where this worker is not`);
  }
  const here = waiters.filter((waiter) => waiter.namespace === teller.namespace);
  if (here.length > 0) await signalWaiters(teller, store, claim, here, outcome);
}

async function signalWaiters(
  teller: WaiterTeller,
  store: ClaimStore,
  claim: HeldClaim,
  reachable: readonly Waiter[],
  outcome: OperatorDecision['decision'],
): Promise<void> {
  // As an operator's: `resolved`, answered from the record; `released`, the call runs for real.
  const decision: OperatorDecision = { key: claim.key, decision: outcome };
  const told: Waiter[] = [];
  for (const waiter of reachable) {
    try {
      // The latest run: a workflow that continued as new waits there, if anywhere.
      await teller.client().workflow.getHandle(waiter.workflowId).signal(OPERATOR_DECISION_SIGNAL, decision);
      told.push(waiter);
      teller.log.info(`Idempotency: told a workflow refused on this key that it was ${outcome}`, {
        idempotencyKey: claim.key,
        workflowId: waiter.workflowId,
      });
    } catch (error) {
      // Closed: nothing waits there any more, and a reset starts from the record anyway.
      if (error instanceof Error && error.name === 'WorkflowNotFoundError') told.push(waiter);
      else leftForOperator(teller, claim, outcome, `signalling workflow ${waiter.workflowId} failed (${errorMessage(error)})`);
    }
  }
  await store.waitersTold(claim.key, told).catch((error: unknown) =>
    teller.log.warn('Idempotency: could not note the waiters told of the outcome; `resume` would tell them again', {
      idempotencyKey: claim.key,
      error: errorMessage(error),
    }),
  );
}

function leftForOperator(teller: Pick<WaiterTeller, 'log'>, claim: HeldClaim, outcome: OperatorDecision['decision'], why: string): void {
  // A released key has no row left, so `resume` would not know it was released; `release-absent` says so and tells them.
  const next =
    outcome === 'resolved'
      ? `run \`temporal-idempotency resume ${claim.key}\``
      : `run \`temporal-idempotency release-absent ${claim.key} --reason "released by its worker: nothing was sent"\``;
  teller.log.error(`Idempotency: the key's claim was ${outcome}, but ${why}; ${next}`, {
    idempotencyKey: claim.key,
  });
}
