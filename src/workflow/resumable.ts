/**
 * Resume without reset: when an activity is refused with
 * IdempotencyOrphanedClaim, wait for an operator's decision instead of
 * failing the workflow, then call the activity again. After `resolve` it
 * returns the recorded result; after `release` it runs for real.
 *
 * Workflow code: imports nothing but @temporalio/workflow and plain constants.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  condition,
  defineQuery,
  defineSignal,
  log,
  setCurrentDetails,
  setHandler,
} from '@temporalio/workflow';
import { IdempotencyOrphanedClaim } from '../failure-types.js';
import { OPERATOR_DECISION_SIGNAL, PENDING_REFUSALS_QUERY } from '../operator-decision.js';
import type { OperatorDecision } from '../operator-decision.js';

export const operatorDecisionSignal = defineSignal<[OperatorDecision]>(OPERATOR_DECISION_SIGNAL);

/** A refused call this workflow is waiting on, as the query and the current details show it. */
export interface PendingRefusal {
  readonly key: string;
  readonly activityType: string;
  /** Workflow time at which the refusal arrived. */
  readonly since: string;
  readonly message: string;
}

export const pendingRefusalsQuery = defineQuery<PendingRefusal[]>(PENDING_REFUSALS_QUERY);

// Module state is per workflow execution: the SDK isolates workflow modules per run.
const pending = new Map<string, PendingRefusal>();
const decisions = new Map<string, OperatorDecision>();
let handlersInstalled = false;

/**
 * Runs `call` (an activity call); if it is refused as orphaned, waits until an
 * operator resolves or releases the key (`temporal-idempotency resolve|release KEY`),
 * then runs `call` again. Other failures are rethrown untouched.
 */
export async function resumable<T>(call: () => Promise<T>): Promise<T> {
  installHandlers();
  for (;;) {
    try {
      return await call();
    } catch (error) {
      const refusal = orphanedRefusalIn(error);
      if (!refusal) throw error;
      await waitForDecision(refusal);
    }
  }
}

async function waitForDecision(refusal: PendingRefusal): Promise<void> {
  pending.set(refusal.key, refusal);
  showPending();
  log.warn('Waiting for an operator decision on a refused call', { idempotencyKey: refusal.key, activityType: refusal.activityType });
  await condition(() => decisions.has(refusal.key));
  const { decision } = decisions.get(refusal.key)!;
  decisions.delete(refusal.key);
  pending.delete(refusal.key);
  showPending();
  log.info(`Operator ${decision} the refused call; calling it again`, { idempotencyKey: refusal.key });
}

function installHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  setHandler(operatorDecisionSignal, (decision) => void decisions.set(decision.key, decision));
  setHandler(pendingRefusalsQuery, () => [...pending.values()]);
}

/** Shown in the Web UI's "current details" of the workflow. */
function showPending(): void {
  const lines = [...pending.values()].map(
    (refusal) =>
      `Waiting for an operator: ${refusal.activityType} was refused (IdempotencyOrphanedClaim), key ${refusal.key}. ` +
      `Check the vendor, then \`temporal-idempotency resolve ${refusal.key} --result JSON\` or \`release ${refusal.key}\`.`,
  );
  setCurrentDetails(lines.join('\n\n'));
}

function orphanedRefusalIn(error: unknown): PendingRefusal | undefined {
  const failure = error instanceof ActivityFailure ? error.cause : error;
  if (!(failure instanceof ApplicationFailure) || failure.type !== IdempotencyOrphanedClaim) return undefined;
  const details = failure.details?.[0] as { key?: unknown; activityType?: unknown } | undefined;
  if (typeof details?.key !== 'string') return undefined;
  return {
    key: details.key,
    activityType: typeof details.activityType === 'string' ? details.activityType : 'unknown',
    since: new Date(Date.now()).toISOString(),
    message: failure.message,
  };
}

