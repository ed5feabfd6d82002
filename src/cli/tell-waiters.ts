/**
 * After a decision, tells every workflow waiting on the key in `resumable()`:
 * the claim's own workflow, every one refused on the key, and `--workflow-id`.
 */
import type { Claim, ClaimOperations } from '../store/index.js';
import { OPERATOR_DECISION_SIGNAL } from '../operator-decision.js';
import { EXIT } from './errors.js';
import { signalDecision } from './signal-workflow.js';

type ClaimIdentity = Pick<Claim, 'key'> & Partial<Pick<Claim, 'namespace' | 'workflowId' | 'runId' | 'activityType'>>;

const NOT_RUNNING = /not found|already completed|workflow execution already|WorkflowNotFound/i;

export async function tellWaiters(
  operations: ClaimOperations,
  claim: ClaimIdentity,
  decision: 'resolved' | 'released',
  flags: { readonly 'no-signal'?: boolean | undefined; readonly 'workflow-id'?: string | undefined },
): Promise<number> {
  if (flags['no-signal']) return EXIT.ok;
  const own = claim.workflowId
    ? { namespace: claim.namespace ?? 'default', workflowId: claim.workflowId, runId: claim.runId ?? null, activityType: claim.activityType ?? 'unknown' }
    : undefined;
  const waiters = await operations.waitersOf(claim.key, own);
  const extra = flags['workflow-id'];
  if (extra && !waiters.some((waiter) => waiter.workflowId === extra)) {
    waiters.push({ key: claim.key, namespace: own?.namespace ?? 'default', workflowId: extra, runId: null, activityType: own?.activityType ?? 'unknown' });
  }
  let failed = 0;
  for (const { waiter, error } of await signalDecision(waiters, { key: claim.key, decision })) {
    if (error === null) {
      console.error(`Signalled workflow ${waiter.workflowId}: ${decision}.`);
      await operations.forgetWaiter(waiter);
    } else if (NOT_RUNNING.test(error)) {
      console.error(`Workflow ${waiter.workflowId} is not running (${error}); reset or start it again if it still needs this call.`);
      await operations.forgetWaiter(waiter);
    } else {
      failed++;
      console.error(
        `The claim is ${decision}, but signalling workflow ${waiter.workflowId} failed (${error}). If it waits in resumable(), ` +
          `signal it yourself: temporal workflow signal --workflow-id ${waiter.workflowId} --name ${OPERATOR_DECISION_SIGNAL} ` +
          `--input '${JSON.stringify({ key: claim.key, decision })}', or run \`temporal-idempotency resume ${claim.key}\` again.`,
      );
    }
  }
  return failed > 0 ? EXIT.signalFailed : EXIT.ok;
}
