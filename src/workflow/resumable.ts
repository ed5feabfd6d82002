/**
 * Resume without reset: when an activity is refused with
 * IdempotencyOrphanedClaim, wait for an operator's decision instead of
 * failing the workflow, then call the activity again with the refused call's
 * key, so the record decides: after `resolve` it returns the recorded result
 * (no second call); after `release` it runs for real; with no decision on
 * record it is refused again and waits again.
 *
 * Workflow code: imports nothing but @temporalio/workflow and plain constants.
 * Needs the workflow interceptors (temporal-idempotency/workflow-interceptors,
 * or IdempotencyPlugin), which carry the key to the activity.
 */
import { ActivityFailure, ApplicationFailure, condition, log } from '@temporalio/workflow';
import { IdempotencyOrphanedClaim } from '../failure-types.js';
// Sandbox-safe: it imports only the error base, no Node built-in and no Temporal worker code.
import { IdempotencyConfigError } from '../errors.js';
import { decisions } from './decisions.js';
import type { PendingRefusal } from './decisions.js';
import { ResumableCall, resumeContext, workflowState } from './resume-context.js';
import type { ResumeTarget } from './resume-context.js';

export const WORKFLOW_INTERCEPTORS_MISSING =
  'resumable() needs the temporal-idempotency workflow interceptors, which carry the refused call\'s key to the ' +
  'activity (without them a resumed call can get a new key and run twice). Register them: ' +
  "Worker.create({ ..., interceptors: { workflowModules: [require.resolve('temporal-idempotency/workflow-interceptors')] } }) " +
  '(or with bundleWorkflowCode({ workflowInterceptorModules })), or use IdempotencyPlugin.';

interface Refusal extends PendingRefusal {
  /** The refused activity's id, to find it among the activities the closure scheduled. */
  readonly activityId: string | undefined;
}

/**
 * Runs `call` (the activity calls of one step); if one of them is refused as orphaned, waits until
 * an operator resolves or releases its key (`temporal-idempotency resolve|release KEY`), then runs
 * `call` again. The activity in the refused call's place (the nth of its type) carries the refused
 * key, and the worker checks against the record that its arguments are the refused call's: a call
 * whose arguments changed is refused, never answered with another action's result or made afresh.
 * Other failures are rethrown untouched.
 */
export async function resumable<T>(call: () => Promise<T>): Promise<T> {
  // Fails the workflow task, loudly, until they are registered: without them a resumed call could get a new key.
  if (!workflowState.interceptorsInstalled) throw new IdempotencyConfigError('interceptors.workflowModules', WORKFLOW_INTERCEPTORS_MISSING);
  let target: ResumeTarget | undefined;
  for (;;) {
    const context = new ResumableCall(target);
    const fromSeq = decisions.nextSeq;
    try {
      return await resumeContext.run(context, call);
    } catch (error) {
      const refusal = orphanedRefusalIn(error);
      if (!refusal) throw error;
      const ordinal = refusal.activityId === undefined ? undefined : context.ordinalOfActivity(refusal.activityType, refusal.activityId);
      await waitForDecision(refusal, fromSeq);
      target = { key: refusal.key, activityType: refusal.activityType, ordinal: ordinal ?? 0 };
    }
  }
}

/** Waits for a decision on the refused key that arrived since the refused call was made. */
async function waitForDecision(refusal: PendingRefusal, fromSeq: number): Promise<void> {
  const decided = () => decisions.since(refusal.key, fromSeq) !== undefined;
  if (!decided()) {
    decisions.startWaiting(refusal);
    log.warn('Waiting for an operator decision on a refused call', { idempotencyKey: refusal.key, activityType: refusal.activityType });
    try {
      await condition(decided);
    } finally {
      decisions.stopWaiting(refusal.key);
    }
  }
  const decision = decisions.since(refusal.key, fromSeq);
  log.info(`Operator ${decision?.decision ?? 'decided'} the refused call; calling it again with its key`, { idempotencyKey: refusal.key });
}

function orphanedRefusalIn(error: unknown): Refusal | undefined {
  const failure = error instanceof ActivityFailure ? error.cause : error;
  if (!(failure instanceof ApplicationFailure) || failure.type !== IdempotencyOrphanedClaim) return undefined;
  const details = failure.details?.[0] as { key?: unknown; activityType?: unknown; refusedActivityId?: unknown } | undefined;
  if (typeof details?.key !== 'string') return undefined;
  // A closure that catches the ActivityFailure and rethrows its cause loses the activity id; the details keep it.
  const refusedActivityId = typeof details.refusedActivityId === 'string' ? details.refusedActivityId : undefined;
  return {
    key: details.key,
    activityType: typeof details.activityType === 'string' ? details.activityType : 'unknown',
    activityId: error instanceof ActivityFailure ? error.activityId : refusedActivityId,
    since: new Date(Date.now()).toISOString(),
    message: failure.message,
  };
}
