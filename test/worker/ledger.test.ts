/**
 * The audit ledger records exactly the calls that went out, and the key
 * travels to the vendor so a vendor that dedups closes the last window.
 */
import { describe, expect, it } from 'vitest';
import { Context } from '@temporalio/activity';
import {
  IdempotencyConfiguration,
  IdempotencyContextError,
  auditLedgerInterceptors,
  idempotencyHeaders,
  idempotencyInterceptors,
  idempotencyKey,
  keyToUuid,
} from '../../src/index.js';
import { CALL_ROUTE, CHARGE_ROUTE, createActivities } from '../../activities/index.js';
import type { ChargeRequest } from '../../activities/index.js';
import type { OrderInput, OrderResult } from '../../workflows/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { activityFailureOf } from '../support/failures.js';
import { useExampleWorkers, useVendor } from '../support/example-workers.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const vendor = useVendor();
const workers = useExampleWorkers(vendor, schema);

const LEASE_MS = 3_000;

/** The in-process worker that takes over after a child is killed: same activities, same options. */
function inProcessWorker(taskQueue: string, vendorDedup: string[] = []) {
  return {
    taskQueue,
    activities: createActivities({ vendorUrl: vendor.url }),
    interceptors: {
      activity: idempotencyInterceptors({
        store: schema.store,
        audit: true,
        leaseMs: LEASE_MS,
        activities: Object.fromEntries(vendorDedup.map((type) => [type, { vendorDedup: true }])),
      }),
    },
  };
}

function orderInput(activityTimeoutMs = 2_000): OrderInput {
  const charge: ChargeRequest = { orderId: uniqueName('order'), customerId: 'c-7', amountCents: 2500, currency: 'EUR' };
  return { charge, phone: '+4930555', activityTimeoutMs };
}

async function ledgerStarts(keys: string[]): Promise<string[]> {
  const { rows } = await schema.pool.query<{ key: string }>(
    `SELECT key FROM "${schema.name}".ledger WHERE event = 'started' AND key = ANY($1) ORDER BY key`,
    [keys],
  );
  return rows.map((row) => row.key);
}

async function keysOf(workflowIds: string[]): Promise<string[]> {
  const { rows } = await schema.pool.query<{ key: string }>(
    `SELECT key FROM "${schema.name}".claims WHERE workflow_id = ANY($1)`,
    [workflowIds],
  );
  return rows.map((row) => row.key);
}

describe('the audit ledger', () => {
  it('matches the vendor request for request over a retry, a replay and a SIGKILL', async () => {
    const taskQueue = uniqueName('tq');
    const worker = await workers.spawn(taskQueue, { leaseMs: LEASE_MS });

    // A retry: the first charge is refused by the vendor (503), the second goes through.
    vendor.script(CHARGE_ROUTE, 'unavailable');
    const retriedInput = orderInput(10_000);
    const retried = await temporal.client.workflow.start('orderWorkflow', { taskQueue, workflowId: uniqueName('wf'), args: [retriedInput] });
    const original = (await retried.result()) as OrderResult;

    // A replay: the same workflow id again answers from the claims and reaches neither vendor nor ledger.
    const replayed = await temporal.client.workflow.execute('orderWorkflow', { taskQueue, workflowId: retried.workflowId, args: [retriedInput] });
    expect(replayed).toEqual(original);

    // A SIGKILL after the vendor placed the call: a started entry without a finish, like the orphaned claim.
    vendor.script(CALL_ROUTE, 'hang-after-performing');
    const placed = vendor.nextAction(CALL_ROUTE);
    const crashed = await temporal.client.workflow.start('orderWorkflow', { taskQueue, workflowId: uniqueName('wf'), args: [orderInput()] });
    await placed;
    worker.kill('SIGKILL');
    await worker.exited;
    await temporal.withWorker(inProcessWorker(taskQueue), () => activityFailureOf(crashed.result()));

    const keys = await keysOf([retried.workflowId, crashed.workflowId]);
    expect(keys).toHaveLength(4); // charge and call, for each workflow
    const vendorRequests = vendor.log.filter((r) => r.idempotencyKey && keys.includes(r.idempotencyKey));
    expect(vendorRequests.map((r) => r.handling).sort()).toEqual(['performed', 'performed', 'performed', 'performed', 'unavailable']);
    expect(await ledgerStarts(keys)).toEqual(vendorRequests.map((r) => r.idempotencyKey).sort());

    const { rows: calls } = await schema.pool.query(
      `SELECT activity_type, attempt, outcome, finished_at IS NULL AS open FROM "${schema.name}".ledger_calls
       WHERE workflow_id = $1 ORDER BY started_at`,
      [crashed.workflowId],
    );
    expect(calls).toEqual([
      { activity_type: 'chargeCard', attempt: 1, outcome: 'completed', open: false },
      { activity_type: 'placeCall', attempt: 1, outcome: null, open: true },
    ]);
  });

  it('registered outside the idempotency interceptor, refuses before the body runs and writes nothing', async () => {
    let bodyRuns = 0;
    const activities = { sendSms: async () => bodyRuns++ };
    for (const activity of [
      [...auditLedgerInterceptors({ ledger: schema.store.auditLedger() }), ...idempotencyInterceptors({ store: schema.store })],
      auditLedgerInterceptors({ ledger: schema.store.auditLedger() }),
    ]) {
      const taskQueue = uniqueName('tq');
      const workflowId = uniqueName('wf');
      const failure = await temporal.withWorker({ taskQueue, activities, interceptors: { activity } }, () =>
        activityFailureOf(temporal.client.workflow.execute('callActivity', { taskQueue, workflowId, args: [{ activity: 'sendSms', args: [] }] })),
      );
      expect(failure.type).toBe(IdempotencyConfiguration);
      expect(failure.nonRetryable).toBe(true);
      expect(failure.message).toMatch(/idempotencyInterceptors\(\{ store, audit: true \}\)/);
      const { rows } = await schema.pool.query(`SELECT 1 FROM "${schema.name}".ledger WHERE workflow_id = $1`, [workflowId]);
      expect(rows).toHaveLength(0);
    }
    expect(bodyRuns).toBe(0);
  });
});

describe('the key, passed to the vendor', () => {
  it('is the claim key inside an intercepted activity, also as a deterministic UUID and a header', async () => {
    const activities = {
      showKey: async () => ({ hex: idempotencyKey(), uuid: idempotencyKey({ format: 'uuid' }), headers: idempotencyHeaders() }),
    };
    const taskQueue = uniqueName('tq');
    const workflowId = uniqueName('wf');
    const [shown] = (await temporal.withWorker(
      { taskQueue, activities, interceptors: { activity: idempotencyInterceptors({ store: schema.store }) } },
      () => temporal.client.workflow.execute('callActivity', { taskQueue, workflowId, args: [{ activity: 'showKey', args: [] }] }),
    )) as Array<{ hex: string; uuid: string; headers: Record<string, string> }>;
    const [key] = await keysOf([workflowId]);
    expect(shown).toEqual({ hex: key, uuid: keyToUuid(key!), headers: { 'Idempotency-Key': key } });
  });

  it('cannot be read outside an activity, or in an activity no interceptor guards, and says so', async () => {
    expect(() => idempotencyKey()).toThrow(IdempotencyContextError);
    expect(() => idempotencyHeaders()).toThrow(/outside an activity/);
    const activities = {
      unguarded: async () => {
        try {
          return idempotencyKey();
        } catch (error) {
          return `${(error as Error).name}: ${(error as Error).message} (${Context.current().info.activityType})`;
        }
      },
    };
    const taskQueue = uniqueName('tq');
    const [message] = await temporal.withWorker({ taskQueue, activities }, () =>
      temporal.client.workflow.execute('callActivity', { taskQueue, workflowId: uniqueName('wf'), args: [{ activity: 'unguarded', args: [] }] }),
    );
    expect(message).toMatch(/^IdempotencyContextError: .*no idempotency interceptor guards: register idempotencyInterceptors/);
  });
});

describe('vendorDedup', () => {
  it('re-runs a call orphaned by SIGKILL with the same key; the vendor dedups and the workflow completes', async () => {
    const taskQueue = uniqueName('tq');
    const worker = await workers.spawn(taskQueue, { leaseMs: LEASE_MS, vendorDedup: ['chargeCard'] });
    vendor.script(CHARGE_ROUTE, 'hang-after-performing');
    const input = orderInput();
    const charged = vendor.nextAction(CHARGE_ROUTE);
    const handle = await temporal.client.workflow.start('orderWorkflow', { taskQueue, workflowId: uniqueName('wf'), args: [input] });
    const action = await charged;
    worker.kill('SIGKILL');
    await worker.exited;

    const result = (await temporal.withWorker(inProcessWorker(taskQueue, ['chargeCard']), () => handle.result())) as OrderResult;
    expect(result.charge.id).toBe(action.id);
    const charges = vendor.actionsOn(CHARGE_ROUTE).filter((a) => (a.body as ChargeRequest).orderId === input.charge.orderId);
    expect(charges).toHaveLength(1);
    const sameKey = vendor.log.filter((r) => r.idempotencyKey === action.idempotencyKey).map((r) => r.handling);
    expect(sameKey).toEqual(['performed', 'replayed']);
    const { rows } = await schema.pool.query(
      `SELECT attempt, outcome FROM "${schema.name}".ledger_calls WHERE key = $1 ORDER BY started_at`,
      [action.idempotencyKey],
    );
    expect(rows).toEqual([
      { attempt: 1, outcome: null },
      { attempt: expect.any(Number), outcome: 'completed' },
    ]);
    expect(rows[1].attempt).toBeGreaterThanOrEqual(2);
  });
});

