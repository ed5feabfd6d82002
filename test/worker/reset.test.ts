/**
 * A completed workflow reset to before its activities re-runs the workflow
 * code; with the default workflow scope the activities answer from the
 * recorded results instead of charging and calling again.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { idempotencyInterceptors } from '../../src/index.js';
import { CALL_ROUTE, CHARGE_ROUTE, createActivities } from '../../activities/index.js';
import { useVendor } from '../support/example-workers.js';
import type { OrderInput, OrderResult } from '../../workflows/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const vendor = useVendor();

describe('a workflow reset', () => {
  it('re-runs to the recorded results: the vendor charged once and called once', async () => {
    const taskQueue = uniqueName('tq');
    const order: OrderInput = {
      charge: { orderId: uniqueName('order'), customerId: 'c-9', amountCents: 990, currency: 'USD' },
      phone: '+15550100',
    };
    const ours = (route: string) =>
      vendor.actionsOn(route).filter((a) => JSON.stringify(a.body).includes(order.charge.orderId));
    const workerOptions = {
      taskQueue,
      activities: createActivities({ vendorUrl: vendor.url }),
      interceptors: { activity: idempotencyInterceptors({ store: schema.store }) },
    };

    const { original, replayed, newRunId, firstRunId } = await temporal.withWorker(workerOptions, async () => {
      const handle = await temporal.client.workflow.start('orderWorkflow', { taskQueue, workflowId: uniqueName('order'), args: [order] });
      const original = (await handle.result()) as OrderResult;
      const history = await handle.fetchHistory();
      const firstTask = history.events?.find((event) => event.workflowTaskCompletedEventAttributes != null);
      const { runId: newRunId } = await temporal.client.workflowService.resetWorkflowExecution({
        namespace: 'default',
        workflowExecution: { workflowId: handle.workflowId, runId: handle.firstExecutionRunId },
        workflowTaskFinishEventId: firstTask!.eventId,
        requestId: randomUUID(),
        reason: 'test: re-run the order',
      });
      const replayed = (await temporal.client.workflow.getHandle(handle.workflowId, newRunId!).result()) as OrderResult;
      return { original, replayed, newRunId, firstRunId: handle.firstExecutionRunId };
    });

    expect(newRunId).not.toBe(firstRunId);
    expect(replayed).toEqual(original);
    expect(ours(CHARGE_ROUTE)).toHaveLength(1);
    expect(ours(CALL_ROUTE)).toHaveLength(1);
  });
});
