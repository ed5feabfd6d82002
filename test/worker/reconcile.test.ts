/**
 * Asking the vendor before refusing: a worker process killed with SIGKILL
 * mid-call leaves a claim without an outcome; the retry, on another worker
 * process, asks the vendor (by the idempotency key) what became of the call,
 * and records, runs or refuses accordingly. The example vendor answers lookups
 * as vendors that dedup on a key do.
 */
import { describe, expect, it } from 'vitest';
import { Context } from '@temporalio/activity';
import { IdempotencyOrphanedClaim, OutcomeUnknownError, idempotencyInterceptors } from '../../src/index.js';
import type { Reconciliation } from '../../src/index.js';
import { CHARGE_ROUTE } from '../../activities/index.js';
import { LOOKUP_ROUTE } from '../../activities/fake-vendor.js';
import type { OrderInput } from '../../workflows/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { activityFailureOf } from '../support/failures.js';
import { useExampleWorkers, useVendor } from '../support/example-workers.js';
import { metricSample, scrapeMetrics } from '../support/metrics.js';

const schema = useTestSchema(import.meta.filename);
const LEASE_MS = 3_000;
const temporal = useTemporal();
const vendor = useVendor();
const workers = useExampleWorkers(vendor, schema);

function order(): OrderInput {
  return {
    charge: { orderId: uniqueName('order'), customerId: 'c-1', amountCents: 4200, currency: 'EUR' },
    phone: uniqueName('+49'),
    activityTimeoutMs: 3_000,
  };
}

function chargesFor(input: OrderInput) {
  return vendor.actionsOn(CHARGE_ROUTE).filter((action) => (action.body as OrderInput['charge']).orderId === input.charge.orderId);
}

/** Starts the order on a worker that is killed with SIGKILL once `atVendor` resolves; a second worker takes over. */
async function killMidCall(input: OrderInput, atVendor: () => Promise<unknown>) {
  const taskQueue = uniqueName('tq');
  const first = await workers.spawn(taskQueue, { leaseMs: LEASE_MS, reconcile: true });
  const reached = atVendor();
  const handle = await temporal.client.workflow.start('orderWorkflow', { taskQueue, workflowId: uniqueName('order'), args: [input] });
  await reached;
  first.kill('SIGKILL');
  await first.exited;
  await workers.spawn(taskQueue, { leaseMs: LEASE_MS, reconcile: true });
  return handle;
}

describe('reconcile, after a worker was killed mid-call', () => {
  it('after the vendor acted: the retry finds it happened, records it, and the workflow completes; one charge', async () => {
    const input = order();
    vendor.script(CHARGE_ROUTE, 'hang-after-performing');
    const lookups = vendor.requestsTo(LOOKUP_ROUTE);
    const handle = await killMidCall(input, () => vendor.nextAction(CHARGE_ROUTE));
    const result = (await handle.result()) as { charge: { id: string } };
    const [charge, ...more] = chargesFor(input);
    expect(more).toHaveLength(0);
    expect(result.charge.id).toBe(charge!.id);
    expect(vendor.requestsTo(LOOKUP_ROUTE) - lookups).toBe(1);
    const { rows } = await schema.pool.query(`SELECT answer FROM "${schema.name}".ledger_reconciliations WHERE workflow_id = $1`, [
      handle.workflowId,
    ]);
    expect(rows).toEqual([{ answer: 'happened' }]);
  });

  it('before the vendor acted: the retry finds it did not happen and charges, once, with the same key', async () => {
    const input = order();
    vendor.script(CHARGE_ROUTE, 'hang-before-performing');
    const lookups = vendor.requestsTo(LOOKUP_ROUTE);
    const handle = await killMidCall(input, () => vendor.nextHeld(CHARGE_ROUTE));
    const result = (await handle.result()) as { charge: { id: string } };
    const [charge, ...more] = chargesFor(input);
    expect(more).toHaveLength(0);
    expect(result.charge.id).toBe(charge!.id);
    // The reconciler asked once and answered "did not happen"; the charge then went out under the orphan's key.
    expect(vendor.requestsTo(LOOKUP_ROUTE) - lookups).toBe(1);
    const { rows } = await schema.pool.query(
      `SELECT r.answer, r.key, c.key AS claim_key FROM "${schema.name}".ledger_reconciliations r
       JOIN "${schema.name}".claims c ON c.key = r.key WHERE r.workflow_id = $1`,
      [handle.workflowId],
    );
    expect(rows).toEqual([{ answer: 'not-happened', key: charge!.idempotencyKey, claim_key: charge!.idempotencyKey }]);
  });

  it("with the vendor's lookup down: the refusal stands, naming the reconciler's answer", async () => {
    const input = order();
    vendor.script(CHARGE_ROUTE, 'hang-after-performing');
    vendor.script(LOOKUP_ROUTE, 'unavailable');
    const handle = await killMidCall(input, () => vendor.nextAction(CHARGE_ROUTE));
    const failure = await activityFailureOf(handle.result());
    expect(failure.type).toBe(IdempotencyOrphanedClaim);
    expect(failure.message).toMatch(/reconcile could not tell about the call of attempt 1 on worker/);
    expect((failure.details?.[0] as { outcomeDetail?: string }).outcomeDetail).toMatch(/lookup answered 503/);
    expect(chargesFor(input)).toHaveLength(1);
  });
});

describe('reconcile, racing', () => {
  it('two attempts on one orphan: one reconciliation, and both answered with its result', async () => {
    const shared = uniqueName('refund');
    let reconciliations = 0;
    let bodies = 0;
    const taskQueue = uniqueName('tq');
    const activities = {
      refund: async () => {
        if (++bodies === 1) throw new OutcomeUnknownError('the line dropped');
        throw new Error('unreachable: the vendor said it happened');
      },
    };
    const interceptors = {
      activity: idempotencyInterceptors({
        store: schema.store,
        activities: {
          refund: {
            key: () => shared,
            reconcile: async (): Promise<Reconciliation> => {
              reconciliations++;
              await new Promise((resolve) => setTimeout(resolve, 500)); // the other attempt arrives meanwhile
              return { outcome: 'happened', result: { refund: 're_1', by: Context.current().info.workflowExecution?.workflowId } };
            },
          },
        },
      }),
    };
    await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      const start = () =>
        temporal.client.workflow.start('callActivity', { taskQueue, workflowId: uniqueName('wf'), args: [{ activity: 'refund', args: [] }] });
      const first = await start();
      const firstResult = first.result();
      // The first attempt's ambiguous error is retried; meanwhile a second workflow meets the same orphan.
      const second = await start();
      const [a, b] = (await Promise.all([firstResult, second.result()])) as [[{ refund: string }], [{ refund: string }]];
      expect(a[0].refund).toBe('re_1');
      expect(b[0].refund).toBe('re_1');
    });
    expect(reconciliations).toBe(1);
    expect(bodies).toBe(1);
    // Counted once, by its answer, on the worker's meter.
    const onQueue = [`taskQueue="${taskQueue}"`, 'activityType="refund"'];
    const text = await scrapeMetrics((body) => metricSample(body, 'idempotency_reconciliations', onQueue) !== undefined);
    expect(metricSample(text, 'idempotency_reconciliations', [...onQueue, 'answer="happened"'])).toBe(1);
    expect(metricSample(text, 'idempotency_reconciliations', [...onQueue, 'answer="not-happened"'])).toBeUndefined();
    expect(metricSample(text, 'idempotency_reconciliations', [...onQueue, 'answer="unknown"'])).toBeUndefined();
  });
});

describe('reconcile, answering with an object that throws when read', () => {
  // Found in review: a vendor SDK's lazy response whose getter throws escaped as a retryable TypeError; each
  // attempt took the claim over and asked again, and the workflow ended in TypeError, unseen by resumable().
  it('the refusal stands: the workflow ends in IdempotencyOrphanedClaim, the claim is unknown, the body ran once', async () => {
    const key = uniqueName('lazy-lookup');
    let asked = 0;
    let bodies = 0;
    const taskQueue = uniqueName('tq');
    const activities = {
      sendSms: async () => {
        bodies++;
        throw new OutcomeUnknownError('the gateway hung up before answering');
      },
    };
    const interceptors = {
      activity: idempotencyInterceptors({
        store: schema.store,
        activities: {
          sendSms: {
            key: () => key,
            reconcile: async (): Promise<Reconciliation> => {
              asked++;
              return {
                get outcome(): never {
                  throw new TypeError('response body already consumed');
                },
              } as unknown as Reconciliation;
            },
          },
        },
      }),
    };
    await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      const handle = await temporal.client.workflow.start('callActivity', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'sendSms', args: [] }],
      });
      const failure = await activityFailureOf(handle.result());
      expect(failure.type).toBe(IdempotencyOrphanedClaim);
      expect(failure.message).toMatch(/reconcile answered something that throws when read \(TypeError\)/);
    });
    expect(bodies).toBe(1);
    expect(asked).toBe(1);
    const { rows } = await schema.pool.query(`SELECT state FROM "${schema.name}".claims WHERE activity_type = 'sendSms' AND workflow_id IS NOT NULL`);
    expect(rows).toEqual([{ state: 'unknown' }]);
  });
});
