/**
 * Found in review: an operator's decision that reaches the workflow in the same workflow
 * task as the refusal (or before it) is dropped, and the workflow waits forever.
 *
 * Core orders an activation's jobs "signals first, then everything else", so when
 * the refusal (ActivityTaskFailed) and the decision signal are both pending for
 * one workflow task, `decisions.receive` runs before `resumable()` has seen the
 * refusal: the key is not pending, the decision is ignored, and `waitForDecision`
 * then waits for a decision that already came. A realistic 3 a.m. sequence: the
 * workflow worker is restarting (a deploy, a crash loop) while the operator, who
 * saw the refusal in the Web UI, resolves or releases the key.
 *
 * And `resume KEY`, the documented remedy "when a signal was lost", cannot reach
 * it after a `release`: the CLI forgot the waiter when the (ignored) signal was
 * delivered, and the released claim no longer names its workflow.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, inject, it } from 'vitest';
import type { WorkflowHandle } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { OutcomeUnknownError, idempotencyInterceptors } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { activityFailures, uniqueName, useTemporal } from '../support/temporal.js';
import { runCli } from '../support/cli.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const cli = (...args: string[]) => runCli([...args, '--schema', schema.name], { TEMPORAL_ADDRESS: inject('temporalAddress') });

async function until(condition: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(100)) if (await condition()) return;
  throw new Error('condition not met in time');
}

/** The refused key, once the refusal is in the workflow's history. */
async function refusedKey(handle: WorkflowHandle): Promise<string> {
  let key: string | undefined;
  await until(async () => {
    const [failure] = await activityFailures(handle);
    const payload = failure?.applicationFailureInfo?.details?.payloads?.[0];
    if (failure?.applicationFailureInfo?.type !== 'IdempotencyOrphanedClaim' || !payload?.data) return false;
    key = (JSON.parse(Buffer.from(payload.data).toString('utf8')) as { key: string }).key;
    return true;
  });
  return key!;
}

/**
 * An activity worker that stays up, and a workflow worker that is down between the moment the
 * refusal is recorded and the moment `operator` has acted; then the workflow worker comes back.
 */
async function decideWhileWorkflowWorkerIsDown(
  operator: (key: string, handle: WorkflowHandle) => Promise<void>,
  afterRestart: (key: string, handle: WorkflowHandle) => Promise<void> = async () => undefined,
): Promise<{ result: unknown; bodies: number; pending: Array<{ key: string }> }> {
  const taskQueue = uniqueName('tq');
  let bodies = 0;
  let gate: (() => void) | undefined;
  const entered = new Promise<void>((resolve) => {
    gate = resolve;
  });
  let open: (() => void) | undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  const activities = {
    placeCall: async () => {
      if (++bodies > 1) return { id: 'placed_after_release' }; // only legitimate after a release
      gate!();
      await opened;
      throw new OutcomeUnknownError('the line dropped before the vendor answered');
    },
  };
  const activityWorker = await Worker.create({
    connection: temporal.nativeConnection,
    taskQueue,
    activities,
    interceptors: { activity: idempotencyInterceptors({ store: schema.store }) },
  });
  const workflowWorker = () =>
    Worker.create({ connection: temporal.nativeConnection, taskQueue, workflowBundle: temporal.workflowBundle, maxCachedWorkflows: 0 });
  return activityWorker.runUntil(async () => {
    const handle = await (await workflowWorker()).runUntil(async () => {
      const started = await temporal.client.workflow.start('resumableCallActivity', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'placeCall', args: [{ to: '+4930123', message: 'hello' }] }],
      });
      await entered; // the call is out; the workflow worker now goes away (a deploy, a crash loop)
      return started;
    });
    open!(); // the line drops: the refusal lands in the history, with no workflow worker to see it
    const key = await refusedKey(handle);
    await operator(key, handle); // the operator saw the refusal in the UI and acted
    const { result, pending } = await (await workflowWorker()).runUntil(async () => {
      await afterRestart(key, handle);
      const result = await Promise.race([handle.result(), sleep(20_000).then(() => 'still waiting after 20 s' as const)]);
      const pending = result === 'still waiting after 20 s' ? await handle.query<Array<{ key: string }>>('temporal-idempotency.pending') : [];
      return { result, pending };
    });
    return { result, bodies, pending };
  });
}

describe('a decision that reaches the workflow together with its refusal', () => {
  it('after `release`, is not lost either: the workflow calls again for real, once', async () => {
    const { result, bodies, pending } = await decideWhileWorkflowWorkerIsDown(async (key) => expect((await cli('release', key)).code).toBe(0));
    expect(pending).toEqual([]);
    expect(result).toEqual([{ id: 'placed_after_release' }]);
    expect(bodies).toBe(2);
  });

  it('is not lost: after `resolve`, the workflow continues with the resolved result', async () => {
    let refused = '';
    const { result, bodies, pending } = await decideWhileWorkflowWorkerIsDown(async (key, handle) => {
      refused = key;
      const resolved = await cli('resolve', key, '--result', '{"id":"call_by_hand"}');
      expect(resolved.code).toBe(0);
      expect(resolved.stderr).toContain(`Signalled workflow ${handle.workflowId}: resolved.`);
    });
    expect(bodies).toBe(1);
    // Fails today: the workflow still waits on the key the operator already resolved.
    expect(pending.map((refusal) => refusal.key)).not.toContain(refused);
    expect(result).toEqual([{ id: 'call_by_hand' }]);
  });

  it('after `release` with the signal lost, `resume KEY` reaches the waiting workflow', async () => {
    const { result, bodies } = await decideWhileWorkflowWorkerIsDown(
      // The signal is lost (here: not sent); the released claim no longer names its workflow.
      async (key) => expect((await cli('release', key, '--no-signal')).code).toBe(0),
      async (key, handle) => {
        // The workflow now waits, showing the key in its pending query; the operator runs the documented remedy.
        await until(async () => ((await handle.query<unknown[]>('temporal-idempotency.pending')) ?? []).length === 1);
        const resumed = await cli('resume', key);
        expect(resumed.code).toBe(0);
        expect(resumed.stderr).toContain(`Signalled workflow ${handle.workflowId}: released.`);
      },
    );
    // After a release the call runs for real (the activity counts it as a second body).
    expect(result).toEqual([{ id: 'placed_after_release' }]);
    expect(bodies).toBe(2);
  });
});
