/**
 * A worker process killed with SIGKILL after the vendor received the call:
 * the retry, on another worker process, must refuse instead of calling again.
 */
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { IdempotencyOrphanedClaim } from '../../src/index.js';
import type { RefusalDetails } from '../../src/index.js';
import { CHARGE_ROUTE } from '../../activities/index.js';
import type { OrderInput } from '../../workflows/index.js';
import { useTestSchema } from '../support/schema.js';
import { activityFailures, uniqueName, useTemporal } from '../support/temporal.js';
import { activityFailureOf } from '../support/failures.js';
import { useExampleWorkers, useVendor } from '../support/example-workers.js';

const schema = useTestSchema(import.meta.filename);
/** Short, so the dead owner is recognised in seconds; liveness.test.ts measures how fast. */
const LEASE_MS = 3_000;
const temporal = useTemporal();
const vendor = useVendor();
const workers = useExampleWorkers(vendor, schema);

describe('a worker killed mid-call', () => {
  it('is not repeated: the retry on another worker process is refused and the vendor saw one charge', async () => {
    const taskQueue = uniqueName('tq');
    const first = await workers.spawn(taskQueue, { leaseMs: LEASE_MS });
    vendor.script(CHARGE_ROUTE, 'hang-after-performing');
    const order: OrderInput = {
      charge: { orderId: uniqueName('order'), customerId: 'c-1', amountCents: 4200, currency: 'EUR' },
      phone: '+4912345',
      activityTimeoutMs: 3_000,
    };
    const charged = vendor.nextAction(CHARGE_ROUTE);
    const handle = await temporal.client.workflow.start('orderWorkflow', { taskQueue, workflowId: uniqueName('order'), args: [order] });

    await charged; // the vendor charged the card; the worker is waiting for the response
    first.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    await workers.spawn(taskQueue, { leaseMs: LEASE_MS });

    const failure = await activityFailureOf(handle.result());
    expect(failure.type).toBe(IdempotencyOrphanedClaim);
    expect(failure.nonRetryable).toBe(true);
    const details = failure.details?.[0] as RefusalDetails;
    expect(details).toMatchObject({
      activityType: 'chargeCard',
      workflowId: handle.workflowId,
      attempt: 1,
      claimedBy: `${hostname()}/${first.pid}`,
      reason: 'owner-died',
    });
    expect(details.refusedAttempt).toBeGreaterThanOrEqual(2);
    expect(failure.message).toMatch(/its worker stopped renewing its lease, which lapsed at/);
    expect(failure.message).toContain(details.key);

    const [historyFailure, ...more] = await activityFailures(handle);
    expect(more).toHaveLength(0);
    expect(historyFailure?.applicationFailureInfo?.type).toBe(IdempotencyOrphanedClaim);
    expect(historyFailure?.applicationFailureInfo?.nonRetryable).toBe(true);

    const charges = vendor.actionsOn(CHARGE_ROUTE).filter((a) => (a.body as OrderInput['charge']).orderId === order.charge.orderId);
    expect(charges).toHaveLength(1);
    expect(vendor.requestsTo(CHARGE_ROUTE)).toBe(1);
    const claim = await schema.store.get(details.key);
    expect(claim).toMatchObject({ state: 'claimed', attempt: 1, claimedBy: `${hostname()}/${first.pid}` });
  });
});
