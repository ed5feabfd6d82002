/**
 * Resume without reset: a workflow whose call was refused waits for an
 * operator; `resolve` or `release` from the CLI signals it, and the call is
 * retried: the resolved result, or a real call after a release. Also checks
 * the metrics the interceptor emitted along the way.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, inject, it } from 'vitest';
import type { WorkflowHandle } from '@temporalio/client';
import { OutcomeUnknownError, idempotencyInterceptors } from '../../src/index.js';
import type { PendingRefusal } from '../../src/workflow/index.js';
import { PENDING_REFUSALS_QUERY } from '../../src/operator-decision.js';
import { CALL_ROUTE, createActivities } from '../../activities/index.js';
import type { CallRequest } from '../../activities/index.js';
import { useVendor } from '../support/example-workers.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { runCli } from '../support/cli.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const vendor = useVendor();

const cli = (...args: string[]) => runCli([...args, '--schema', schema.name], { TEMPORAL_ADDRESS: inject('temporalAddress') });

function callsTo(call: CallRequest) {
  return vendor.actionsOn(CALL_ROUTE).filter((action) => (action.body as CallRequest).to === call.to);
}

/** Polls the workflow's query until it reports a refused call it waits on. */
async function waitingOn(handle: WorkflowHandle): Promise<PendingRefusal> {
  for (let i = 0; i < 200; i++) {
    const [pending] = await handle.query<PendingRefusal[]>(PENDING_REFUSALS_QUERY);
    if (pending) return pending;
    await sleep(100);
  }
  throw new Error('the workflow never reported a refused call');
}

async function currentDetails(handle: WorkflowHandle): Promise<string> {
  const metadata = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
  return metadata.currentDetails ?? '';
}

/**
 * Runs `resumableCallActivity` for `placeCall` on an intercepted worker, waits until the
 * workflow reports the refused call, lets `operator` decide it, and returns the workflow's result.
 */
async function refuseThenResume(
  activities: { placeCall: (request: CallRequest) => Promise<unknown> },
  call: CallRequest,
  operator: (pending: PendingRefusal, handle: WorkflowHandle) => Promise<void>,
): Promise<unknown> {
  const taskQueue = uniqueName('tq');
  const interceptors = { activity: idempotencyInterceptors({ store: schema.store }) };
  return temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
    const handle = await temporal.client.workflow.start('resumableCallActivity', {
      taskQueue,
      workflowId: uniqueName('wf'),
      args: [{ activity: 'placeCall', args: [call] }],
    });
    await operator(await waitingOn(handle), handle);
    return handle.result();
  });
}

describe('a refused call, resumed by an operator', () => {
  it('after `resolve`, returns the resolved result; the vendor was called once', async () => {
    const call: CallRequest = { to: uniqueName('+49'), message: 'Your order shipped' };
    const example = createActivities({ vendorUrl: vendor.url });
    let lineDrops = 1;
    const activities = {
      placeCall: async (request: CallRequest) => {
        await example.placeCall(request);
        if (lineDrops-- > 0) throw new OutcomeUnknownError('the line dropped before the vendor answered');
        throw new Error('unreachable: after resolve the activity must not be called again');
      },
    };
    const result = await refuseThenResume(activities, call, async (pending, handle) => {
      expect(pending.activityType).toBe('placeCall');
      expect(await currentDetails(handle)).toContain(`Waiting for an operator: placeCall was refused (IdempotencyOrphanedClaim), key ${pending.key}`);
      const resolved = await cli('resolve', pending.key, '--result', '{"id":"call_by_hand","status":"done"}');
      expect(resolved.code).toBe(0);
      expect(resolved.stderr).toContain(`Signalled workflow ${handle.workflowId}: resolved.`);
    });
    expect(result).toEqual([{ id: 'call_by_hand', status: 'done' }]);
    expect(callsTo(call)).toHaveLength(1);
  });

  it('after `release` of a call that never went out, runs it for real; the vendor was called once', async () => {
    const call: CallRequest = { to: uniqueName('+49'), message: 'Your order shipped' };
    const example = createActivities({ vendorUrl: vendor.url });
    let resets = 1;
    const activities = {
      placeCall: async (request: CallRequest) => {
        if (resets-- > 0) throw new OutcomeUnknownError('connection reset while sending; unclear whether it arrived');
        return example.placeCall(request);
      },
    };
    const result = await refuseThenResume(activities, call, async (pending) => {
      expect(callsTo(call)).toHaveLength(0); // the operator checks the vendor: nothing there
      const released = await cli('release', pending.key);
      expect(released.code).toBe(0);
    });
    expect(callsTo(call)).toHaveLength(1);
    expect(result).toEqual([{ id: callsTo(call)[0]!.id, status: 'done' }]);
  });
});

describe('metrics', () => {
  it('counts claims, replays and refusals by type, and times claims, on the runtime\'s meter', async () => {
    let calls = 0;
    const activities = {
      notify: async () => ++calls,
      dial: async () => Promise.reject(new OutcomeUnknownError('line dropped')),
    };
    const taskQueue = uniqueName('tq');
    const interceptors = { activity: idempotencyInterceptors({ store: schema.store }) };
    await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      await temporal.client.workflow.execute('callActivity', { taskQueue, workflowId: uniqueName('wf'), args: [{ activity: 'notify', args: [], times: 2 }] });
      await temporal.client.workflow
        .execute('callActivity', { taskQueue, workflowId: uniqueName('wf'), args: [{ activity: 'dial', args: [] }] })
        .catch(() => undefined);
    });
    const text = await scrapeUntil((body) => body.includes(taskQueue) && body.includes('idempotency_refusals'));
    const value = (name: string, ...labels: string[]) => sampleOf(text, name, [`taskQueue="${taskQueue}"`, ...labels]);
    expect(value('idempotency_claims', 'activityType="notify"')).toBe(1);
    expect(value('idempotency_claims', 'activityType="dial"')).toBe(1);
    expect(value('idempotency_replays', 'activityType="notify"')).toBe(1);
    expect(value('idempotency_refusals', 'activityType="dial"', 'type="IdempotencyOrphanedClaim"')).toBe(1);
    expect(value('idempotency_claim_latency_count', 'activityType="notify"')).toBe(2);
    expect(calls).toBe(1);
  });
});

/** The value of the one sample of `name` whose labels include all of `labels`. */
function sampleOf(text: string, name: string, labels: string[]): number | undefined {
  const line = text
    .split('\n')
    .find((candidate) => candidate.startsWith(`${name}{`) && labels.every((label) => candidate.includes(label)));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

async function scrapeUntil(ready: (body: string) => boolean): Promise<string> {
  let body = '';
  for (let i = 0; i < 50; i++) {
    body = await (await fetch(process.env['TEST_PROMETHEUS_URL']!)).text();
    if (ready(body)) return body;
    await sleep(100);
  }
  return body;
}
