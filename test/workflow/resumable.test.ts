/**
 * Resume without reset: a workflow whose call was refused waits for an
 * operator; `resolve` or `release` from the CLI signals it, and the call is
 * retried: the resolved result, or a real call after a release. Also checks
 * the metrics the interceptor emitted along the way.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, inject, it } from 'vitest';
import type { WorkflowHandle } from '@temporalio/client';
import { Context } from '@temporalio/activity';
import { OutcomeUnknownError, idempotencyInterceptors } from '../../src/index.js';
import type { ClaimStore, IdempotencyOptions, RefusalDetails } from '../../src/index.js';
import type { PendingRefusal } from '../../src/workflow/index.js';
import { OPERATOR_DECISION_SIGNAL, PENDING_REFUSALS_QUERY } from '../../src/operator-decision.js';
import { defaultPayloadConverter } from '@temporalio/common';
import { CALL_ROUTE, createActivities } from '../../activities/index.js';
import type { CallRequest } from '../../activities/index.js';
import { useVendor } from '../support/example-workers.js';
import { useTestSchema } from '../support/schema.js';
import { activityFailures, uniqueName, useTemporal } from '../support/temporal.js';
import { runCli } from '../support/cli.js';
import { waitingOn } from '../support/pending-refusal.js';
import { activityFailureOf } from '../support/failures.js';
import { metricSample, scrapeMetrics } from '../support/metrics.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const vendor = useVendor();

const cli = (...args: string[]) => runCli([...args, '--schema', schema.name], { TEMPORAL_ADDRESS: inject('temporalAddress') });

function callsTo(call: CallRequest) {
  return vendor.actionsOn(CALL_ROUTE).filter((action) => (action.body as CallRequest).to === call.to);
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
  activities: Record<string, (...args: never[]) => Promise<unknown>>,
  call: CallRequest,
  operator: (pending: PendingRefusal, handle: WorkflowHandle) => Promise<void>,
  setup: { options?: Omit<IdempotencyOptions, 'store'>; workflow?: string; local?: boolean } = {},
): Promise<unknown> {
  const taskQueue = uniqueName('tq');
  const interceptors = { activity: idempotencyInterceptors({ store: schema.store, ...setup.options }) };
  return temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
    const handle = await temporal.client.workflow.start(setup.workflow ?? 'resumableCallActivity', {
      taskQueue,
      workflowId: uniqueName('wf'),
      args: [{ activity: 'placeCall', args: [call], local: setup.local }],
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
      expect(await currentDetails(handle)).toContain(`Waiting for an operator decision on placeCall (key ${pending.key}). Refusing to run placeCall again`);
      expect(await currentDetails(handle)).toContain(`\`npx temporal-idempotency release ${pending.key}\``);
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

/** placeCall that reaches the vendor, then loses the answer once; it must never be called a second time. */
function dropsTheLineOnce(): { placeCall: (request: CallRequest, ...rest: unknown[]) => Promise<unknown>; bodies: () => number } {
  const example = createActivities({ vendorUrl: vendor.url });
  let bodies = 0;
  return {
    bodies: () => bodies,
    placeCall: async (request: CallRequest) => {
      if (++bodies > 1) throw new Error('unreachable: after resolve the activity must not be called again');
      await example.placeCall(request);
      throw new OutcomeUnknownError('the line dropped before the vendor answered');
    },
  };
}

/**
 * The operator's part: a decision signalled by hand while nothing is on record, which must leave the
 * workflow waiting again with the activity not called, then a real `resolve` with `result`.
 */
function decideByHandThenResolve(activity: { bodies: () => number }, result: string) {
  return async (pending: PendingRefusal, handle: WorkflowHandle) => {
    await handle.signal(OPERATOR_DECISION_SIGNAL, { key: pending.key, decision: 'resolved' });
    await sleep(1_500);
    expect((await waitingOn(handle)).key).toBe(pending.key);
    expect(activity.bodies()).toBe(1);
    expect((await cli('resolve', pending.key, '--result', result)).code).toBe(0);
  };
}

describe('the resumed call carries the refused call\'s key', () => {
  it('under call scope, where the new call has a new activity id: resolve answers from the record', async () => {
    const call: CallRequest = { to: uniqueName('+49'), message: 'call scope' };
    const activity = dropsTheLineOnce();
    const result = await refuseThenResume(
      { placeCall: activity.placeCall },
      call,
      async (pending) => expect((await cli('resolve', pending.key, '--result', '{"id":"call_resolved","status":"done"}')).code).toBe(0),
      { options: { activities: { placeCall: { scope: 'call' } } } },
    );
    expect(result).toEqual([{ id: 'call_resolved', status: 'done' }]);
    expect(callsTo(call)).toHaveLength(1);
    expect(activity.bodies()).toBe(1);
  });

  it('when the closure rebuilds a request id that keyArgs leaves out: resolve answers from the record', async () => {
    const call: CallRequest = { to: uniqueName('+49'), message: 'fresh request id' };
    const activity = dropsTheLineOnce();
    const result = await refuseThenResume(
      { placeCall: activity.placeCall },
      call,
      async (pending) => expect((await cli('resolve', pending.key, '--result', '{"id":"fresh_resolved","status":"done"}')).code).toBe(0),
      { workflow: 'resumableFreshRequest', options: { activities: { placeCall: { keyArgs: (args) => args[0] } } } },
    );
    expect(result).toEqual([{ id: 'fresh_resolved', status: 'done' }]);
    expect(activity.bodies()).toBe(1);
  });

  it('when the closure rebuilds a request id that is part of the key: refused by name after resolve, never called again', async () => {
    const call: CallRequest = { to: uniqueName('+49'), message: 'fresh request id in the key' };
    const activity = dropsTheLineOnce();
    const failure = await activityFailureOf(
      refuseThenResume(
        { placeCall: activity.placeCall },
        call,
        async (pending) => expect((await cli('resolve', pending.key, '--result', '{"id":"fresh_resolved","status":"done"}')).code).toBe(0),
        { workflow: 'resumableFreshRequest' },
      ),
    );
    expect(failure.type).toBe('IdempotencyKeyReuse');
    expect(failure.nonRetryable).toBe(true);
    expect((failure.details?.[0] as RefusalDetails).reason).toBe('resumed-arguments-changed');
    expect(failure.message).toContain('leave it out of the key with keyArgs');
    expect(activity.bodies()).toBe(1);
    expect(callsTo(call)).toHaveLength(1);
  });

  it('when the closure rebuilds a request id that is part of the key, a hand-made decision with nothing on record is refused again and waits again', async () => {
    const call: CallRequest = { to: uniqueName('+49'), message: 'fresh request id, early decision' };
    const activity = dropsTheLineOnce();
    const failure = await activityFailureOf(
      refuseThenResume(
        { placeCall: activity.placeCall },
        call,
        // The record has no outcome yet: the refusal stands and the workflow waits again, whatever the arguments.
        decideByHandThenResolve(activity, '{"id":"fresh_resolved","status":"done"}'),
        { workflow: 'resumableFreshRequest' },
      ),
    );
    expect((failure.details?.[0] as RefusalDetails).reason).toBe('resumed-arguments-changed');
    expect(activity.bodies()).toBe(1);
    expect(callsTo(call)).toHaveLength(1);
  });

  it('when the closure rebuilds the arguments: release runs it for real, once', async () => {
    const call: CallRequest = { to: uniqueName('+49'), message: 'released' };
    const example = createActivities({ vendorUrl: vendor.url });
    let bodies = 0;
    const activities = {
      placeCall: async (request: CallRequest) => {
        if (++bodies === 1) throw new OutcomeUnknownError('reset while connecting; unclear whether it arrived');
        return example.placeCall(request);
      },
    };
    const result = await refuseThenResume(activities, call, async (pending) => expect((await cli('release', pending.key)).code).toBe(0), {
      workflow: 'resumableFreshRequest',
    });
    expect(callsTo(call)).toHaveLength(1);
    expect(result).toEqual([{ id: callsTo(call)[0]!.id, status: 'done' }]);
  });

  it('a hand-made decision with nothing on record is refused again and waits again; the vendor is not called', async () => {
    const call: CallRequest = { to: uniqueName('+49'), message: 'forged decision' };
    const activity = dropsTheLineOnce();
    const result = await refuseThenResume(
      { placeCall: activity.placeCall },
      call,
      decideByHandThenResolve(activity, '{"id":"after_forgery","status":"done"}'),
      { options: { activities: { placeCall: { scope: 'call' } } } },
    );
    expect(result).toEqual([{ id: 'after_forgery', status: 'done' }]);
    expect(callsTo(call)).toHaveLength(1);
  });
});

describe('decisions reach every waiter', () => {
  it('wakes two identical resumable() calls waiting on one key with one resolve', async () => {
    const call: CallRequest = { to: uniqueName('+49'), message: 'twice' };
    const activity = dropsTheLineOnce();
    const result = await refuseThenResume(
      { placeCall: activity.placeCall },
      call,
      async (pending, handle) => {
        await until(async () => (await handle.query<PendingRefusal[]>(PENDING_REFUSALS_QUERY)).length === 1 && (await refusals(handle)) === 2);
        expect((await cli('resolve', pending.key, '--result', '{"id":"both","status":"done"}')).code).toBe(0);
      },
      { workflow: 'resumableTwice' },
    );
    expect(result).toEqual([[{ id: 'both', status: 'done' }], [{ id: 'both', status: 'done' }]]);
    expect(activity.bodies()).toBe(1);
  });

  it('ignores a decision signal without a payload, and a correct one afterwards still works', async () => {
    const call: CallRequest = { to: uniqueName('+49'), message: 'malformed' };
    const activity = dropsTheLineOnce();
    let workflow: WorkflowHandle | undefined;
    const result = await refuseThenResume({ placeCall: activity.placeCall }, call, async (pending, handle) => {
      workflow = handle;
      await handle.signal(OPERATOR_DECISION_SIGNAL);
      await handle.signal(OPERATOR_DECISION_SIGNAL, { key: 42, decision: 'maybe' });
      expect((await cli('resolve', pending.key, '--result', '{"id":"after_malformed","status":"done"}')).code).toBe(0);
    });
    expect(result).toEqual([{ id: 'after_malformed', status: 'done' }]);
    const history = await workflow!.fetchHistory();
    expect(history.events?.filter((event) => event.workflowTaskFailedEventAttributes != null)).toEqual([]);
  });

  it('signals every workflow refused on a shared custom key, each refusal naming its own workflow', async () => {
    const taskQueue = uniqueName('tq');
    const shared = uniqueName('refund');
    const activity = dropsTheLineOnce();
    const call: CallRequest = { to: uniqueName('+49'), message: 'shared key' };
    const options = { activities: { placeCall: { key: () => shared } } };
    const interceptors = { activity: idempotencyInterceptors({ store: schema.store, ...options }) };
    await temporal.withWorker({ taskQueue, activities: { placeCall: activity.placeCall }, interceptors }, async () => {
      const start = () =>
        temporal.client.workflow.start('resumableCallActivity', { taskQueue, workflowId: uniqueName('wf'), args: [{ activity: 'placeCall', args: [call] }] });
      const first = await start();
      const pending = await waitingOn(first);
      const second = await start();
      await waitingOn(second);
      const [refusal] = (await activityFailures(second)).map((failure) => failure.applicationFailureInfo);
      const details = refusal?.details?.payloads?.[0] ? (defaultPayloadConverter.fromPayload(refusal.details.payloads[0] as never) as RefusalDetails) : undefined;
      expect(details).toMatchObject({ workflowId: first.workflowId, refusedWorkflowId: second.workflowId });
      const resolved = await cli('resolve', pending.key, '--result', '{"id":"for_both","status":"done"}');
      expect(resolved.code).toBe(0);
      expect(resolved.stderr).toContain(`Signalled workflow ${first.workflowId}: resolved.`);
      expect(resolved.stderr).toContain(`Signalled workflow ${second.workflowId}: resolved.`);
      expect(await Promise.all([first.result(), second.result()])).toEqual([[{ id: 'for_both', status: 'done' }], [{ id: 'for_both', status: 'done' }]]);
    });
    expect(activity.bodies()).toBe(1);
  });

  it('goes on with the result a paused owner records after the workflow was refused: its worker tells the workflow, nobody runs `resume`', async () => {
    const taskQueue = uniqueName('tq');
    const paused = new Set<string>();
    const store: ClaimStore = Object.assign(Object.create(schema.store) as ClaimStore, {
      renewLeases: (claims: Parameters<ClaimStore['renewLeases']>[0], leaseMs: number) =>
        schema.store.renewLeases(claims.filter((claim) => !paused.has(claim.token)), leaseMs),
    });
    let wake: (() => void) | undefined;
    let bodies = 0;
    const activities = {
      placeCall: async () => {
        bodies++;
        const { rows } = await schema.pool.query<{ token: string }>(`SELECT token FROM "${schema.name}".claims WHERE workflow_id = $1`, [
          Context.current().info.workflowExecution!.workflowId,
        ]);
        paused.add(rows[0]!.token); // a long GC pause: no renewals, the lease lapses, the attempt still runs
        await new Promise<void>((resolve) => (wake = resolve));
        return { id: 'placed_by_the_paused_owner' };
      },
    };
    const interceptors = { activity: idempotencyInterceptors({ store, leaseMs: 1_500 }) };
    const { result, key } = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      const handle = await temporal.client.workflow.start('resumableCallActivity', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'placeCall', args: [], startToCloseTimeoutMs: 2_500 }],
      });
      const pending = await waitingOn(handle); // attempt 2 found the lapsed lease and was refused
      wake!(); // the paused owner finishes and records its result
      return { result: await handle.result(), key: pending.key };
    });
    expect(result).toEqual([{ id: 'placed_by_the_paused_owner' }]);
    expect(bodies).toBe(1);
    // Told: a later `resume` has nobody left to tell, and `prune` counts from the signal.
    const { rows } = await schema.pool.query(`SELECT signalled_at FROM "${schema.name}".waiters WHERE key = $1`, [key]);
    expect(rows).toEqual([{ signalled_at: expect.any(Date) }]);
  });

  it('lets `resume` continue a workflow whose refused key completed afterwards, when the owner\'s store cannot read who waits', async () => {
    const taskQueue = uniqueName('tq');
    const paused = new Set<string>();
    const store: ClaimStore = Object.assign(Object.create(schema.store) as ClaimStore, {
      renewLeases: (claims: Parameters<ClaimStore['renewLeases']>[0], leaseMs: number) =>
        schema.store.renewLeases(claims.filter((claim) => !paused.has(claim.token)), leaseMs),
      // It records the outcome, then cannot read who was refused meanwhile (its connection dropped).
      waitersToTell: async () => {
        throw Object.assign(new Error('Connection terminated unexpectedly'), { code: '57P01' });
      },
    });
    let wake: (() => void) | undefined;
    let bodies = 0;
    const activities = {
      placeCall: async () => {
        bodies++;
        const { rows } = await schema.pool.query<{ token: string }>(`SELECT token FROM "${schema.name}".claims WHERE workflow_id = $1`, [
          Context.current().info.workflowExecution!.workflowId,
        ]);
        paused.add(rows[0]!.token); // a long GC pause: no renewals, the lease lapses, the attempt still runs
        await new Promise<void>((resolve) => (wake = resolve));
        return { id: 'placed_by_the_paused_owner' };
      },
    };
    const interceptors = { activity: idempotencyInterceptors({ store, leaseMs: 1_500 }) };
    const result = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      const handle = await temporal.client.workflow.start('resumableCallActivity', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'placeCall', args: [], startToCloseTimeoutMs: 2_500 }],
      });
      const pending = await waitingOn(handle); // attempt 2 found the lapsed lease and was refused
      wake!(); // the paused owner finishes and records its result
      await until(async () => (await schema.store.get(pending.key))?.state === 'completed');
      const resolve = await cli('resolve', pending.key, '--result', '{}');
      expect(resolve.code).toBe(4);
      expect(resolve.stderr).toContain(`temporal-idempotency resume ${pending.key}`);
      const resumed = await cli('resume', pending.key);
      expect(resumed.code).toBe(0);
      expect(resumed.stderr).toContain(`Signalled workflow ${handle.workflowId}: resolved.`);
      return handle.result();
    });
    expect(result).toEqual([{ id: 'placed_by_the_paused_owner' }]);
    expect(bodies).toBe(1);
  });
});

describe('the pending query and current details', () => {
  it('answer from the workflow\'s start, before any call, and after continue-as-new', async () => {
    const taskQueue = uniqueName('tq');
    await temporal.withWorker({ taskQueue, activities: {}, interceptors: { activity: idempotencyInterceptors({ store: schema.store }) } }, async () => {
      const handle = await temporal.client.workflow.start('idleThenContinue', { taskQueue, workflowId: uniqueName('wf'), args: [{}] });
      expect(await handle.query(PENDING_REFUSALS_QUERY)).toEqual([]);
      await until(async () => (await handle.describe()).runId !== handle.firstExecutionRunId);
      expect(await temporal.client.workflow.getHandle(handle.workflowId).query(PENDING_REFUSALS_QUERY)).toEqual([]);
      await handle.terminate();
    });
  });

  it('are cleared when the wait is cancelled', async () => {
    const call: CallRequest = { to: uniqueName('+49'), message: 'cancelled wait' };
    const activity = dropsTheLineOnce();
    const taskQueue = uniqueName('tq');
    const interceptors = { activity: idempotencyInterceptors({ store: schema.store }) };
    await temporal.withWorker({ taskQueue, activities: { placeCall: activity.placeCall }, interceptors }, async () => {
      const handle = await temporal.client.workflow.start('cancellableResumable', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'placeCall', args: [call] }],
      });
      await waitingOn(handle);
      await handle.signal('cancelWait');
      await until(async () => (await handle.query<PendingRefusal[]>(PENDING_REFUSALS_QUERY)).length === 0);
      expect(await currentDetails(handle)).toBe('');
      await handle.terminate();
    });
  });
});

/** How many refusals (failed activity attempts) the workflow's history holds. */
async function refusals(handle: WorkflowHandle): Promise<number> {
  return (await activityFailures(handle)).filter((failure) => failure.applicationFailureInfo?.type === 'IdempotencyOrphanedClaim').length;
}

async function until(condition: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(100)) if (await condition()) return;
  throw new Error('condition not met in time');
}

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
    const text = await scrapeMetrics((body) => body.includes(taskQueue) && body.includes('idempotency_refusals'));
    const value = (name: string, ...labels: string[]) => metricSample(text, name, [`taskQueue="${taskQueue}"`, ...labels]);
    expect(value('idempotency_claims', 'activityType="notify"')).toBe(1);
    expect(value('idempotency_claims', 'activityType="dial"')).toBe(1);
    expect(value('idempotency_replays', 'activityType="notify"')).toBe(1);
    expect(value('idempotency_refusals', 'activityType="dial"', 'type="IdempotencyOrphanedClaim"')).toBe(1);
    expect(value('idempotency_claim_latency_count', 'activityType="notify"')).toBe(2);
    expect(calls).toBe(1);
  });
});
