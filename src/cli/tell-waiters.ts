/**
 * After a decision, tells every workflow waiting on the key in `resumable()`:
 * the claim's own workflow, every one refused on the key, and `--workflow-id`.
 */
import type { Claim, ClaimOperations } from '../store/index.js';
import { OPERATOR_DECISION_SIGNAL } from '../operator-decision.js';
import { CliError, EXIT } from './errors.js';
import { signalDecision } from './signal-workflow.js';
import { terminalText } from './terminal-text.js';
import { loadTemporalTarget } from './temporal-connection.js';
import { errorMessage } from '../error-text.js';

type ClaimIdentity = Pick<Claim, 'key'> & Partial<Pick<Claim, 'namespace' | 'workflowId' | 'runId' | 'activityType'>>;

/**
 * Before a decision changes a claim: Temporal connection settings that can never work (a package
 * missing for an API key or TLS, a profile that is not there) are refused now, with nothing changed,
 * rather than after the claim changed, when no waiting workflow could be told.
 */
export async function checkSignalSettings(flags: { readonly 'no-signal'?: boolean | undefined }): Promise<void> {
  if (flags['no-signal']) return;
  try {
    await loadTemporalTarget();
  } catch (error) {
    throw new CliError(
      `Cannot signal the workflows waiting on this claim: ${errorMessage(error)}. Nothing was changed. Fix the Temporal ` +
        'settings, or pass --no-signal and tell the workflows later with `temporal-idempotency resume KEY`.',
      EXIT.usage,
    );
  }
}

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
  if (waiters.length === 0 && !extra) {
    console.error(`No workflow is on record as waiting on ${claim.key}; nothing to signal.`);
    return EXIT.ok;
  }
  const target = await loadTemporalTarget().catch((error: unknown) => (error instanceof Error ? error : new Error(errorMessage(error))));
  if (extra && !waiters.some((waiter) => waiter.workflowId === extra)) {
    // A workflow named by hand has no namespace on record: the profile's (or TEMPORAL_NAMESPACE), else the claim's.
    const namespace = (target instanceof Error ? process.env['TEMPORAL_NAMESPACE'] : target.namespace) ?? own?.namespace ?? 'default';
    waiters.push({ key: claim.key, namespace, workflowId: extra, runId: null, activityType: own?.activityType ?? 'unknown' });
  }
  let failed = 0;
  for (const outcome of await signalDecision(waiters, { key: claim.key, decision }, target)) {
    const { waiter } = outcome;
    if (outcome.delivered) {
      console.error(`Signalled workflow ${terminalText(waiter.workflowId)}: ${decision}.`);
      await operations.markSignalled(waiter);
    } else if (outcome.closed) {
      console.error(`Workflow ${terminalText(waiter.workflowId)} is not running (${terminalText(outcome.error)}); reset or start it again if it still needs this call.`);
      await operations.forgetWaiter(waiter);
    } else {
      failed++;
      console.error(
        // Temporal's error echoes the workflow id, and ids and namespaces can carry any text: escaped, like every claim's text.
        `The claim is ${decision}, but signalling workflow ${terminalText(waiter.workflowId)} in namespace ${terminalText(waiter.namespace)} failed ` +
          `(${terminalText(outcome.error)}). If it waits in resumable(), signal it yourself: temporal workflow signal --namespace ` +
          `${terminalText(waiter.namespace)} --workflow-id ${terminalText(waiter.workflowId)} --name ${OPERATOR_DECISION_SIGNAL} --input ` +
          `'${JSON.stringify({ key: claim.key, decision })}', or run \`temporal-idempotency resume ${claim.key}\` again.`,
      );
    }
  }
  return failed > 0 ? EXIT.signalFailed : EXIT.ok;
}
