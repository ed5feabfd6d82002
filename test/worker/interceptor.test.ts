/**
 * The interceptor on a real Temporal dev server and real Postgres, with an
 * in-process worker: what each kind of call finds, and what it answers.
 */
import { describe, expect, it } from 'vitest';
import { Context } from '@temporalio/activity';
import { CompleteAsyncError } from '@temporalio/common';
import type { ActivityFunction } from '@temporalio/common';
import {
  IdempotencyConfigError,
  IdempotencyInvalidKeyInput,
  IdempotencyKeyReuse,
  IdempotencyOrphanedClaim,
  OutcomeUnknownError,
  idempotencyInterceptors,
  idempotencyKey,
} from '../../src/index.js';
import type { IdempotencyOptions, RefusalDetails } from '../../src/index.js';
import { CHARGE_ROUTE, createActivities } from '../../activities/index.js';
import { useVendor } from '../support/example-workers.js';
import { useTestSchema } from '../support/schema.js';
import { activityFailures, uniqueName, useTemporal } from '../support/temporal.js';
import { activityFailureOf } from '../support/failures.js';
import { XorCodec } from '../support/codecs.js';
import type { CallActivityInput } from '../support/workflows.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const vendor = useVendor();

type Activities = Record<string, ActivityFunction>;
type Options = Omit<IdempotencyOptions, 'store'>;

/** Runs `callActivity` on a fresh task queue with an intercepted in-process worker. */
async function callActivity(activities: Activities, input: CallActivityInput, options: Options = {}, workflowId = uniqueName('wf')) {
  const taskQueue = uniqueName('tq');
  return temporal.withWorker(
    { taskQueue, activities, interceptors: { activity: idempotencyInterceptors({ store: schema.store, ...options }) } },
    () => temporal.client.workflow.execute('callActivity', { taskQueue, workflowId, args: [input] }),
  );
}

const charge = { orderId: 'o-1', customerId: 'c-1', amountCents: 1999, currency: 'EUR' };

function vendorActivities() {
  return createActivities({ vendorUrl: vendor.url });
}

describe('first call and repeats', () => {
  it('retries an error thrown before anything happened, and the vendor performed the charge once', async () => {
    const order = { ...charge, orderId: uniqueName('order') };
    vendor.script(CHARGE_ROUTE, 'unavailable');
    const before = vendor.requestsTo(CHARGE_ROUTE);
    const [receipt] = (await callActivity(vendorActivities(), { activity: 'chargeCard', args: [order] })) as [{ id: string }];
    expect(vendor.requestsTo(CHARGE_ROUTE) - before).toBe(2); // the 503, then the retry
    const performed = vendor.actionsOn(CHARGE_ROUTE).filter((action) => (action.body as typeof order).orderId === order.orderId);
    expect(performed).toHaveLength(1);
    expect(receipt.id).toBe(performed[0]!.id);
  });

  it('answers a repeat of the same action from the recorded result, without calling the activity', async () => {
    const order = { ...charge, orderId: uniqueName('order') };
    const results = await callActivity(vendorActivities(), { activity: 'chargeCard', args: [order], times: 3 });
    const performed = vendor.actionsOn(CHARGE_ROUTE).filter((action) => (action.body as typeof order).orderId === order.orderId);
    expect(performed).toHaveLength(1);
    expect(results).toEqual([results[0], results[0], results[0]]);
  });

  it('treats different arguments as different actions', async () => {
    const order = { ...charge, orderId: uniqueName('order') };
    let calls = 0;
    const activities = { chargeCard: async (c: typeof order) => `${c.amountCents}:${++calls}` };
    const workflowId = uniqueName('wf');
    await callActivity(activities, { activity: 'chargeCard', args: [order] }, {}, workflowId);
    const second = await callActivity(activities, { activity: 'chargeCard', args: [{ ...order, amountCents: 5 }] }, {}, workflowId);
    expect(second).toEqual(['5:2']);
  });

  it('keys on keyArgs only, so a changing trace id does not make a new action', async () => {
    let calls = 0;
    const activities = { send: async (_to: string, _traceId: string) => ++calls };
    const options: Options = { activities: { send: { keyArgs: ([to]) => [to] } } };
    const workflowId = uniqueName('wf');
    await callActivity(activities, { activity: 'send', args: ['+4912345', 'trace-1'] }, options, workflowId);
    const again = await callActivity(activities, { activity: 'send', args: ['+4912345', 'trace-2'] }, options, workflowId);
    expect(again).toEqual([1]);
    expect(calls).toBe(1);
  });
});

describe('activities that are not writes', () => {
  it('runs a poll set to false on every call, so a polling loop sees the status change', async () => {
    const statuses = ['pending', 'pending', 'pending', 'succeeded'];
    let polls = 0;
    const activities = { getPaymentStatus: async () => statuses[polls++] };
    const results = await callActivity(activities, { activity: 'getPaymentStatus', args: ['pay_1'], times: 4 }, { activities: { getPaymentStatus: false } });
    expect(results).toEqual(statuses);
    expect(polls).toBe(4);
  });

  it("with guard: 'listed', guards only the listed activities; an unguarded one has no key and no ledger entry", async () => {
    let sends = 0;
    let reads = 0;
    const workflowId = uniqueName('wf');
    const activities = {
      send: async () => ++sends,
      read: async () => {
        reads++;
        return Promise.reject(new Error('unreachable')).catch(() => {
          try {
            idempotencyKey();
            return 'had a key';
          } catch (error) {
            return (error as Error).message;
          }
        });
      },
    };
    const options: Options = { guard: 'listed', audit: true, activities: { send: {} } };
    expect(await callActivity(activities, { activity: 'send', args: [], times: 2 }, options, workflowId)).toEqual([1, 1]);
    const [message] = (await callActivity(activities, { activity: 'read', args: [], times: 2 }, options, workflowId)) as [string];
    expect(reads).toBe(2);
    expect(message).toMatch(/which its settings leave unguarded/);
    const { rows } = await schema.pool.query(`SELECT activity_type FROM "${schema.name}".ledger WHERE workflow_id = $1 AND event = 'started'`, [workflowId]);
    expect(rows).toEqual([{ activity_type: 'send' }]);
  });
});

describe('recorded results replay exactly', () => {
  const shapes: Array<[string, unknown]> = [
    ['undefined', undefined],
    ['a Uint8Array', new Uint8Array([0, 1, 254, 255])],
    ['a large object', { lines: Array.from({ length: 5_000 }, (_, i) => ({ sku: `sku-${i}`, qty: i % 7, note: 'x'.repeat(20) })) }],
    ['null', null],
  ];
  it.each(shapes)('replays %s as the activity returned it', async (_, value) => {
    let calls = 0;
    const activities = { produce: async () => (calls++, value) };
    const taskQueue = uniqueName('tq');
    const workflowId = uniqueName('wf');
    const run = () =>
      temporal.withWorker(
        { taskQueue, activities, interceptors: { activity: idempotencyInterceptors({ store: schema.store }) } },
        () => temporal.client.workflow.execute('describeActivityResult', { taskQueue, workflowId, args: [{ activity: 'produce', args: [] }] }),
      );
    const original = await run();
    const replayed = await run();
    expect(calls).toBe(1);
    expect(replayed).toEqual(original);
    expect(original.isUndefined).toBe(value === undefined);
    expect(original.isUint8Array).toBe(value instanceof Uint8Array);
  });

  it('stores results through the worker codec, so an encrypting codec keeps them out of the table', async () => {
    const codec = new XorCodec();
    let calls = 0;
    const activities = { fetchSecret: async () => (calls++, { cardNumber: '4242424242424242' }) };
    const workflowId = uniqueName('wf');
    const options: Options = { payloadCodecs: [codec] };
    const first = await callActivity(activities, { activity: 'fetchSecret', args: [] }, options, workflowId);
    const second = await callActivity(activities, { activity: 'fetchSecret', args: [] }, options, workflowId);
    expect(second).toEqual(first);
    expect(calls).toBe(1);
    const { rows } = await schema.pool.query<{ stored: { metadata: Record<string, string>; data: string } }>(
      `SELECT result_payload AS stored FROM "${schema.name}".claims WHERE workflow_id = $1`,
      [workflowId],
    );
    expect(rows).toHaveLength(1);
    const stored = rows[0]!.stored;
    expect(Buffer.from(stored.metadata['encoding']!, 'base64').toString()).toBe('binary/xor');
    const storedBytes = Buffer.from(stored.data, 'base64').toString('latin1');
    expect(storedBytes).not.toContain('cardNumber');
    expect(storedBytes).not.toContain('4242424242424242');
  });
});

describe('refusals', () => {
  it('refuses, non-retryably, when the activity says its outcome is unknown, and never calls again', async () => {
    let calls = 0;
    const activities = {
      placeCall: async () => {
        calls++;
        throw new OutcomeUnknownError('socket closed after the request was sent');
      },
    };
    const taskQueue = uniqueName('tq');
    const workflowId = uniqueName('wf');
    await temporal.withWorker(
      { taskQueue, activities, interceptors: { activity: idempotencyInterceptors({ store: schema.store }) } },
      async () => {
        const handle = await temporal.client.workflow.start('callActivity', {
          taskQueue,
          workflowId,
          args: [{ activity: 'placeCall', args: ['+4912345'] }],
        });
        const failure = await activityFailureOf(handle.result());
        expect(failure.type).toBe(IdempotencyOrphanedClaim);
        expect(failure.nonRetryable).toBe(true);
        expect(failure.message).toMatch(/marked its outcome unknown \(the activity threw OutcomeUnknownError\)/);
        expect(failure.message).not.toContain('socket closed after the request was sent');
        const details = failure.details?.[0] as RefusalDetails;
        expect(details).toMatchObject({ activityType: 'placeCall', workflowId, attempt: 1, reason: 'outcome-unknown' });
        expect(details.key).toMatch(/^[0-9a-f]{64}$/);
        expect(failure.message).toContain(details.key);
        const [historyFailure] = await activityFailures(handle);
        expect(historyFailure?.applicationFailureInfo?.type).toBe(IdempotencyOrphanedClaim);
      },
    );
    expect(calls).toBe(1);
  });

  it('uses a per-activity isAmbiguous to decide that an error leaves the outcome unknown', async () => {
    let calls = 0;
    const activities = {
      sendSms: async () => {
        calls++;
        throw Object.assign(new Error('ETIMEDOUT'), { code: 'ETIMEDOUT' });
      },
    };
    const options: Options = { activities: { sendSms: { isAmbiguous: (error) => (error as { code?: string }).code === 'ETIMEDOUT' } } };
    const failure = await activityFailureOf(callActivity(activities, { activity: 'sendSms', args: ['hi'] }, options));
    expect(failure.type).toBe(IdempotencyOrphanedClaim);
    expect(calls).toBe(1);
  });

  it('refuses a custom key that maps different actions to one key', async () => {
    let calls = 0;
    const activities = { refund: async (amount: number) => (calls++, amount) };
    const options: Options = { activities: { refund: { key: () => 'refund-for-order-7' } } };
    expect(await callActivity(activities, { activity: 'refund', args: [10] }, options)).toEqual([10]);
    const failure = await activityFailureOf(callActivity(activities, { activity: 'refund', args: [99] }, options));
    expect(failure.type).toBe(IdempotencyKeyReuse);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toMatch(/different action/);
    expect(calls).toBe(1);
  });

  it('dedups a custom key across workflows when the action is the same', async () => {
    let calls = 0;
    const activities = { refund: async (amount: number) => (calls++, amount) };
    const key = uniqueName('refund');
    const options: Options = { activities: { refund: { key: () => key } } };
    await callActivity(activities, { activity: 'refund', args: [10] }, options);
    expect(await callActivity(activities, { activity: 'refund', args: [10] }, options)).toEqual([10]);
    expect(calls).toBe(1);
  });

  it('refuses, non-retryably, arguments that have no stable key, naming the path, and never runs the activity', async () => {
    let calls = 0;
    const activities = { notify: async () => calls++ };
    const options: Options = { activities: { notify: { keyArgs: ([to]) => [{ to, at: new URL(String(to)) }] } } };
    const failure = await activityFailureOf(callActivity(activities, { activity: 'notify', args: ['https://x.test'] }, options));
    expect(failure.type).toBe(IdempotencyInvalidKeyInput);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toContain('args[0].at');
    expect(calls).toBe(0);
  });
});

describe('local activities', () => {
  it('go through the same claim: retried after a definite error, then replayed, with one vendor charge', async () => {
    const order = { ...charge, orderId: uniqueName('order') };
    vendor.script(CHARGE_ROUTE, 'unavailable');
    const results = await callActivity(vendorActivities(), { activity: 'chargeCard', args: [order], local: true, times: 2 });
    const performed = vendor.actionsOn(CHARGE_ROUTE).filter((action) => (action.body as typeof order).orderId === order.orderId);
    expect(performed).toHaveLength(1);
    expect(results[1]).toEqual(results[0]);
  });

  it('are refused like any activity when their outcome is unknown', async () => {
    const activities = { dial: async () => Promise.reject(new OutcomeUnknownError('line dropped after dialing')) };
    const failure = await activityFailureOf(callActivity(activities, { activity: 'dial', args: [], local: true }));
    expect(failure.type).toBe(IdempotencyOrphanedClaim);
  });
});

describe('async completion', () => {
  it('keeps the claim while the outcome arrives through the client, so a later repeat refuses', async () => {
    let calls = 0;
    let taskToken: Uint8Array | undefined;
    const activities = {
      approveLoan: async () => {
        calls++;
        taskToken = Context.current().info.taskToken;
        throw new CompleteAsyncError();
      },
    };
    const taskQueue = uniqueName('tq');
    const workflowId = uniqueName('wf');
    const interceptors = { activity: idempotencyInterceptors({ store: schema.store }) };
    const result = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      const handle = await temporal.client.workflow.start('callActivity', { taskQueue, workflowId, args: [{ activity: 'approveLoan', args: [] }] });
      while (!taskToken) await new Promise((resolve) => setTimeout(resolve, 50));
      await temporal.client.activity.complete(taskToken, 'approved');
      return handle.result();
    });
    expect(result).toEqual(['approved']);
    const failure = await activityFailureOf(
      temporal.withWorker({ taskQueue, activities, interceptors }, () =>
        temporal.client.workflow.execute('callActivity', { taskQueue, workflowId, args: [{ activity: 'approveLoan', args: [] }] }),
      ),
    );
    expect(failure.type).toBe(IdempotencyOrphanedClaim);
    expect(calls).toBe(1);
  });
});

describe('configuration', () => {
  it.each([
    ['no store', {}, /store/],
    ['an unknown scope', { scope: 'global' }, /scope: "global" is not a scope/],
    ['an unknown per-activity setting', { activities: { chargeCard: { scopes: 'run' } } }, /activities\.chargeCard\.scopes/],
    ['a keyArgs that is not a function', { activities: { chargeCard: { keyArgs: 'orderId' } } }, /keyArgs: expected a function/],
    ['a negative recordRetryMs', { recordRetryMs: -1 }, /recordRetryMs/],
  ])('fails at worker configuration on %s, naming the option', (_, options, message) => {
    const withStore = 'store' in options || _ === 'no store' ? options : { store: schema.store, ...options };
    expect(() => idempotencyInterceptors(withStore as IdempotencyOptions)).toThrow(IdempotencyConfigError);
    expect(() => idempotencyInterceptors(withStore as IdempotencyOptions)).toThrow(message);
  });
});

/** A stand-in for an encrypting codec: the stored bytes are not the plaintext. */
