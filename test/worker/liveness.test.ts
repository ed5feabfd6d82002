/**
 * Liveness: a claim without an outcome means "still running" as often as
 * "died". A live owner's result is handed over; a dead owner is refused once
 * its lease lapses; neither ever runs the action twice.
 */
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { Context } from '@temporalio/activity';
import { Worker } from '@temporalio/worker';
import {
  IdempotencyClaimBusy,
  IdempotencyOrphanedClaim,
  PostgresClaimStore,
  idempotencyInterceptors,
} from '../../src/index.js';
import type { RefusalDetails } from '../../src/index.js';
import { CHARGE_ROUTE, createActivities } from '../../activities/index.js';
import type { ChargeRequest } from '../../activities/index.js';
import type { OrderInput } from '../../workflows/index.js';
import { useTestSchema } from '../support/schema.js';
import { activityFailedAt } from '../../dev/history.js';
import { pendingActivityFailure, uniqueName, useTemporal } from '../support/temporal.js';
import { activityFailureOf } from '../support/failures.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { useExampleWorkers, useVendor } from '../support/example-workers.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const vendor = useVendor();
const workers = useExampleWorkers(vendor, schema);

const LEASE_MS = 3_000;
/** One poll (a quarter lease at most), a retry interval, and a busy dev server on 2 cores. */
const REFUSAL_MARGIN_MS = 2_500;

const interceptors = () => ({ activity: idempotencyInterceptors({ store: schema.store, leaseMs: LEASE_MS }) });

function order(): ChargeRequest {
  return { orderId: uniqueName('order'), customerId: 'c-1', amountCents: 1500, currency: 'EUR' };
}

function chargesFor(charge: ChargeRequest) {
  return vendor.actionsOn(CHARGE_ROUTE).filter((action) => (action.body as ChargeRequest).orderId === charge.orderId);
}

describe('an earlier attempt that is still running', () => {
  it('hands its result to the next attempt: the workflow completes and the vendor charged once', async () => {
    const charge = order();
    const bodyAttempts: number[] = [];
    const { chargeCard } = createActivities({ vendorUrl: vendor.url });
    const activities = {
      slowCharge: async (request: ChargeRequest) => {
        const { attempt } = Context.current().info;
        bodyAttempts.push(attempt);
        const receipt = await chargeCard(request);
        if (attempt === 1) await sleep(5_000); // outlives its 4 s start-to-close timeout, alive
        return receipt;
      },
    };
    const taskQueue = uniqueName('tq');
    const { result, startedAttempts } = await temporal.withWorker({ taskQueue, activities, interceptors: interceptors() }, async () => {
      const handle = await temporal.client.workflow.start('callActivity', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'slowCharge', args: [charge], startToCloseTimeoutMs: 4_000 }],
      });
      const result = await handle.result();
      const history = await handle.fetchHistory();
      const startedAttempts = history.events?.flatMap((e) => e.activityTaskStartedEventAttributes?.attempt ?? []);
      return { result, startedAttempts };
    });
    expect(bodyAttempts).toEqual([1]);
    expect(chargesFor(charge)).toHaveLength(1);
    expect(result).toEqual([{ id: chargesFor(charge)[0]!.id, status: 'done' }]);
    expect(startedAttempts).toEqual([2]); // attempt 2 completed the activity, with attempt 1's receipt
  });

  it('lets the next attempt run for real when the earlier one ends in a definite error', async () => {
    const bodyAttempts: number[] = [];
    const activities = {
      flakySend: async () => {
        const { attempt } = Context.current().info;
        bodyAttempts.push(attempt);
        if (attempt === 1) {
          await sleep(4_500);
          throw new Error('connection refused before sending');
        }
        return `sent on attempt ${attempt}`;
      },
    };
    const taskQueue = uniqueName('tq');
    const result = await temporal.withWorker({ taskQueue, activities, interceptors: interceptors() }, () =>
      temporal.client.workflow.execute('callActivity', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'flakySend', args: [], startToCloseTimeoutMs: 4_000 }],
      }),
    );
    expect(bodyAttempts).toEqual([1, 2]);
    expect(result).toEqual(['sent on attempt 2']);
  });

  it('fails retryably with IdempotencyClaimBusy while the wait runs out, and never runs the body again', async () => {
    const bodyAttempts: number[] = [];
    const activities = {
      verySlow: async () => {
        bodyAttempts.push(Context.current().info.attempt);
        await sleep(9_000);
        return 'done by attempt 1';
      },
    };
    const taskQueue = uniqueName('tq');
    const busyInterceptors = { activity: idempotencyInterceptors({ store: schema.store, leaseMs: LEASE_MS, maxWaitMs: 500 }) };
    const { result, busy } = await temporal.withWorker({ taskQueue, activities, interceptors: busyInterceptors }, async () => {
      const handle = await temporal.client.workflow.start('callActivity', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'verySlow', args: [], startToCloseTimeoutMs: 2_500 }],
      });
      const busy = await pendingActivityFailure(handle, (failure) => failure.type === IdempotencyClaimBusy);
      return { result: await handle.result(), busy };
    });
    expect(busy.nonRetryable).toBeFalsy();
    expect(bodyAttempts).toEqual([1]);
    expect(result).toEqual(['done by attempt 1']);
  });
});

describe('an owner that is gone', () => {
  it('killed with SIGKILL: the next attempt waits only until its lease lapses, then refuses', async () => {
    const taskQueue = uniqueName('tq');
    const owner = await workers.spawn(taskQueue, { leaseMs: LEASE_MS });
    vendor.script(CHARGE_ROUTE, 'hang-after-performing');
    const input: OrderInput = { charge: order(), phone: '+4912345', activityTimeoutMs: 2_000 };
    const charged = vendor.nextAction(CHARGE_ROUTE);
    const handle = await temporal.client.workflow.start('orderWorkflow', { taskQueue, workflowId: uniqueName('order'), args: [input] });
    await charged;
    owner.kill('SIGKILL');
    const killedAt = Date.now();
    await owner.exited;

    const failure = await temporal.withWorker(
      { taskQueue, activities: createActivities({ vendorUrl: vendor.url }), interceptors: interceptors() },
      () => activityFailureOf(handle.result()),
    );
    const refusedAfterMs = (await activityFailedAt(handle)) - killedAt;
    console.log(`SIGKILL to refusal: ${refusedAfterMs} ms (lease ${LEASE_MS} ms, renewed every ${LEASE_MS / 3} ms)`);
    expect(refusedAfterMs).toBeLessThan(LEASE_MS + REFUSAL_MARGIN_MS);
    expect(failure.type).toBe(IdempotencyOrphanedClaim);
    expect(failure.message).toMatch(/its worker stopped renewing its lease, which lapsed at/);
    expect((failure.details?.[0] as RefusalDetails).claimedBy).toBe(`${hostname()}/${owner.pid}`);
    expect(chargesFor(input.charge)).toHaveLength(1);
  });

  it('cut off from Postgres while alive: its lease lapses and the next attempt refuses; nothing runs twice', async () => {
    const databaseUrl = new URL(inject('databaseUrl'));
    const proxy = new TcpProxy(databaseUrl.hostname, Number(databaseUrl.port));
    const proxiedUrl = Object.assign(new URL(databaseUrl), { port: String(await proxy.start()) });
    try {
      const taskQueue = uniqueName('tq');
      const owner = await workers.spawn(taskQueue, { leaseMs: LEASE_MS, databaseUrl: proxiedUrl.toString() });
      vendor.script(CHARGE_ROUTE, 'hang-after-performing');
      const charge = order();
      const charged = vendor.nextAction(CHARGE_ROUTE);
      // Many attempts: the cut-off owner keeps polling and fails the ones it gets with IdempotencyStoreUnavailable.
      const handle = await temporal.client.workflow.start('callActivity', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'chargeCard', args: [charge], startToCloseTimeoutMs: 2_000, maximumAttempts: 100 }],
      });
      await charged;
      proxy.cut();

      const failure = await temporal.withWorker(
        { taskQueue, activities: createActivities({ vendorUrl: vendor.url }), interceptors: interceptors() },
        () => activityFailureOf(handle.result()),
      );
      expect(failure.type).toBe(IdempotencyOrphanedClaim);
      expect((failure.details?.[0] as RefusalDetails).claimedBy).toBe(`${hostname()}/${owner.pid}`);
      expect(chargesFor(charge)).toHaveLength(1);
      expect(await Promise.race([owner.exited.then(() => 'exited'), sleep(100).then(() => 'alive')])).toBe('alive');
    } finally {
      await proxy.stop();
    }
  });
});

describe('lease renewal', () => {
  it('sends one renewal statement per interval for 200 activities in flight on one worker', async () => {
    const renewals: Array<{ at: number; rows: number }> = [];
    const pool = new pg.Pool({ connectionString: inject('databaseUrl'), max: 20 });
    const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<pg.QueryResult>;
    pool.query = (async (...args: unknown[]) => {
      const result = await query(...args);
      const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string }).text;
      if (text?.includes('SET lease_expires_at = now()')) renewals.push({ at: Date.now(), rows: result.rowCount ?? 0 });
      return result;
    }) as typeof pool.query;
    const store = new PostgresClaimStore({ pool, schema: schema.name });
    const renewalLeaseMs = 1_500; // renewed every 500 ms

    let started = 0;
    let openGate: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    const activities = {
      hold: async (index: number) => {
        started++;
        await gate;
        return index;
      },
    };
    const taskQueue = uniqueName('tq');
    try {
      const { results, inWindow } = await temporal.withWorker(
        {
          taskQueue,
          activities,
          maxConcurrentActivityTaskExecutions: 250,
          interceptors: { activity: idempotencyInterceptors({ store, leaseMs: renewalLeaseMs }) },
        },
        async () => {
          const handle = await temporal.client.workflow.start('fanOut', {
            taskQueue,
            workflowId: uniqueName('wf'),
            args: [{ activity: 'hold', count: 200 }],
          });
          while (started < 200) await sleep(50);
          await sleep(600); // let a renewal of all 200 happen before the window opens
          const windowStart = Date.now();
          await sleep(3_000);
          const inWindow = renewals.filter((renewal) => renewal.at >= windowStart);
          openGate();
          return { results: await handle.result(), inWindow };
        },
      );
      console.log(`200 activities in flight: ${inWindow.length} renewal statements in 3 s, rows ${inWindow.map((r) => r.rows).join(',')}`);
      expect(inWindow.length).toBeGreaterThanOrEqual(5);
      expect(inWindow.length).toBeLessThanOrEqual(7);
      for (const renewal of inWindow) expect(renewal.rows).toBe(200);
      expect(results).toHaveLength(200);
    } finally {
      openGate();
      await pool.end();
    }
  });
});

describe('graceful worker shutdown with a call in flight', () => {
  it('never releases the claim: it is marked unknown, and the next attempt refuses', async () => {
    const charge = order();
    const taskQueue = uniqueName('tq');
    vendor.script(CHARGE_ROUTE, 'hang-after-performing');
    const worker = await Worker.create({
      connection: temporal.nativeConnection,
      taskQueue,
      workflowBundle: temporal.workflowBundle,
      activities: createActivities({ vendorUrl: vendor.url }),
      interceptors: interceptors(),
      shutdownGraceTime: '300ms',
    });
    const running = worker.run();
    const charged = vendor.nextAction(CHARGE_ROUTE);
    const handle = await temporal.client.workflow.start('callActivity', {
      taskQueue,
      workflowId: uniqueName('wf'),
      args: [{ activity: 'chargeCard', args: [charge] }],
    });
    await charged;
    worker.shutdown();
    await running;

    const { rows } = await schema.pool.query(
      `SELECT state, outcome_note FROM "${schema.name}".claims WHERE workflow_id = $1`,
      [handle.workflowId],
    );
    expect(rows).toEqual([{ state: 'unknown', outcome_note: expect.stringMatching(/WORKER_SHUTDOWN/) }]);

    const failure = await temporal.withWorker(
      { taskQueue, activities: createActivities({ vendorUrl: vendor.url }), interceptors: interceptors() },
      () => activityFailureOf(handle.result()),
    );
    expect(failure.type).toBe(IdempotencyOrphanedClaim);
    expect((failure.details?.[0] as RefusalDetails).reason).toBe('outcome-unknown');
    expect(chargesFor(charge)).toHaveLength(1);
  });
});
