/**
 * resumable() in a new workflow on a worker without the workflow interceptors: the activity
 * interceptor registered, `workflowModules` forgotten. The interceptors carry the refused call's key
 * to the call resumable() makes after an operator's decision; without them that call is keyed as a
 * new one, and under `call` scope (keyed on the activity id, new on each call) it would run a second
 * time. So resumable() fails the workflow task with IdempotencyConfigError before any call, on every
 * attempt, while the workflow stays open; a worker with the interceptors then takes it from there.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import type { WorkflowHandle } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { DefaultLogger, Worker, bundleWorkflowCode } from '@temporalio/worker';
import type { WorkflowBundle } from '@temporalio/worker';
import { OutcomeUnknownError, idempotencyInterceptors } from '../../src/index.js';
import { WORKFLOW_INTERCEPTORS_MISSING } from '../../src/workflow/resumable.js';
import { runCli } from '../support/cli.js';
import { waitingOn } from '../support/pending-refusal.js';
import { useTestSchema } from '../support/schema.js';
import { activityFailures, uniqueName, useTemporal, workflowTaskFailures } from '../support/temporal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

/** This release's test workflows, bundled without `workflowInterceptorModules`. */
let withoutInterceptors: WorkflowBundle;
beforeAll(async () => {
  withoutInterceptors = await bundleWorkflowCode({
    workflowsPath: fileURLToPath(new URL('../support/workflows.ts', import.meta.url)),
    logger: new DefaultLogger('WARN'),
  });
}, 180_000);

async function scheduledActivities(handle: WorkflowHandle): Promise<number> {
  const { events } = await handle.fetchHistory();
  return (events ?? []).filter((event) => event.activityTaskScheduledEventAttributes != null).length;
}

async function claimsOf(workflowId: string): Promise<Array<{ key: string; state: string }>> {
  const { rows } = await schema.pool.query<{ key: string; state: string }>(
    `SELECT key, state FROM "${schema.name}".claims WHERE workflow_id = $1 ORDER BY claimed_at`,
    [workflowId],
  );
  return rows;
}

async function until(condition: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(100)) if (await condition()) return;
  throw new Error(`${what}: not within ${timeoutMs} ms`);
}

describe('resumable() on a worker without the workflow interceptors', () => {
  it('fails the new workflow\'s task with IdempotencyConfigError before any call, on every attempt; with the interceptors registered it goes on, and a call-scoped placeCall refused and resolved is called once', async () => {
    let bodies = 0;
    const activities = {
      placeCall: async (to: string) => {
        if (++bodies > 1) throw new Error(`unreachable: placeCall to ${to} called a second time`);
        throw new OutcomeUnknownError(`the line to ${to} dropped before the vendor answered`);
      },
    };
    const interceptors = { activity: idempotencyInterceptors({ store: schema.store, activities: { placeCall: { scope: 'call' } } }) };
    const taskQueue = uniqueName('tq');
    const workflowId = uniqueName('wf');
    const worker = await Worker.create({ connection: temporal.nativeConnection, taskQueue, workflowBundle: withoutInterceptors, activities, interceptors });

    const refusedTask = expect.objectContaining({
      cause: proto.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE,
      failure: expect.objectContaining({ message: `Invalid idempotency option interceptors.workflowModules: ${WORKFLOW_INTERCEPTORS_MISSING}` }),
    });
    const handle = await worker.runUntil(async () => {
      const handle = await temporal.client.workflow.start('resumableCallActivity', {
        taskQueue,
        workflowId,
        args: [{ activity: 'placeCall', args: [uniqueName('+49')] }],
      });
      // Whichever comes first: the task failing, or the call being scheduled.
      await until(async () => (await workflowTaskFailures(handle)).length > 0 || (await scheduledActivities(handle)) > 0, 'a task failure or a call');
      expect(await workflowTaskFailures(handle)).toEqual([refusedTask]);
      expect(await scheduledActivities(handle)).toBe(0);
      // Not a one-off: the retried task fails again on this worker (the history records only the first failure).
      await until(async () => ((await handle.describe()).raw.pendingWorkflowTask?.attempt ?? 0) >= 3, 'a third attempt of the task');
      return handle;
    });
    expect(await workflowTaskFailures(handle)).toEqual([refusedTask]);
    expect(await scheduledActivities(handle)).toBe(0);
    expect(bodies).toBe(0);
    expect(await claimsOf(workflowId)).toEqual([]);
    expect((await handle.describe()).status.name).toBe('RUNNING');

    // The fix the message names: the same workflow code, bundled with the interceptors, on the same task queue.
    const { result, key } = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      // The server answers no query while the task is failing: first the refusal, in the history.
      await until(async () => (await activityFailures(handle)).length > 0, 'the call refused');
      const { key } = await waitingOn(handle);
      const resolved = await runCli(['resolve', key, '--result', '{"id":"call_by_hand"}', '--schema', schema.name], {
        TEMPORAL_ADDRESS: inject('temporalAddress'),
      });
      expect({ code: resolved.code, stderr: resolved.stderr }).toEqual({ code: 0, stderr: expect.stringContaining(`Signalled workflow ${workflowId}: resolved.`) });
      return { result: await handle.result(), key };
    });
    expect(result).toEqual([{ id: 'call_by_hand' }]);
    expect(bodies).toBe(1);
    // One key for the one action: the call made after the decision was answered from its record, not keyed anew.
    expect(await claimsOf(workflowId)).toEqual([{ key, state: 'completed' }]);
  });
});
