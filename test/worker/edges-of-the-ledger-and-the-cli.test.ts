/**
 * Found in review, on the edges of the interceptor and the CLI, each on a real Temporal server and Postgres.
 */
import { describe, expect, inject, it } from 'vitest';
import type { ActivityFunction } from '@temporalio/common';
import { IdempotencyOrphanedClaim, OutcomeUnknownError, idempotencyInterceptors } from '../../src/index.js';
import type { AuditLedger, IdempotencyOptions } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { activityFailureOf } from '../support/failures.js';
import { runCli } from '../support/cli.js';
import type { CallActivityInput } from '../support/workflows.js';
import { waitingOn } from '../support/pending-refusal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

async function run(activities: Record<string, ActivityFunction>, input: CallActivityInput, options: Omit<IdempotencyOptions, 'store'> = {}) {
  const taskQueue = uniqueName('tq');
  const interceptors = { activity: idempotencyInterceptors({ store: schema.store, ...options }) };
  return temporal.withWorker({ taskQueue, activities, interceptors }, () =>
    temporal.client.workflow.execute('callActivity', { taskQueue, workflowId: uniqueName('wf'), args: [input] }),
  );
}

describe('the audit ledger fails before the call', () => {
  it('a connection reset while appending the start entry is retried, not refused: nothing went out', async () => {
    // What node-postgres rejects with when the socket under a query is reset (a failover, a proxy, a NAT timeout).
    const reset = () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', errno: -104, syscall: 'read' });
    const real = schema.store.auditLedger();
    let resets = 1;
    const ledger: AuditLedger = {
      recordStart: async (call) => {
        if (resets-- > 0) throw reset();
        return real.recordStart(call);
      },
      recordFinish: (call, outcome, message) => real.recordFinish(call, outcome, message),
    };
    let bodies = 0;
    const activities = { chargeCard: async () => ({ id: `ch_${++bodies}` }) };
    // Fails today: the ledger's own Postgres error is classified as the vendor call's transport error
    // (ECONNRESET: "the request may have reached the vendor"), the claim is kept `unknown`, and the
    // workflow is refused non-retryably for a call that was never made.
    const result = await run(activities, { activity: 'chargeCard', args: [{ amountCents: 500 }] }, { audit: ledger }).catch(
      (error: unknown) => ({ failedWith: (error as { cause?: { cause?: { type?: string } } }).cause?.cause?.type }),
    );
    expect(result).toEqual([{ id: 'ch_1' }]);
    expect(bodies).toBe(1);
  });
});

describe('an isAmbiguous written in plain JavaScript', () => {
  it('a truthy (non-boolean) answer counts as ambiguous: the call is refused, not repeated', async () => {
    let bodies = 0;
    const activities = {
      placeCall: async () => {
        bodies++;
        if (bodies === 1) throw new Error('vendor request timed out after the call was placed');
        return { id: 'placed_again' };
      },
    };
    // A JavaScript classifier: String.prototype.match returns an array (truthy) or null.
    const isAmbiguous = (error: unknown) => (error as Error).message.match(/timed out/) as unknown as boolean;
    const failure = await activityFailureOf(
      run(activities, { activity: 'placeCall', args: [{ to: '+4930123' }] }, { activities: { placeCall: { isAmbiguous } } }),
    ).catch((error: unknown) => error);
    // Fails today: `isAmbiguous(error) === true` is false for a match array, so the claim is released,
    // Temporal retries, and the call the classifier said might have happened is placed again.
    expect(bodies).toBe(1);
    expect((failure as { type?: string }).type).toBe(IdempotencyOrphanedClaim);
  });
});

describe('the CLI signals the namespace the waiting workflow is in', () => {
  it('with TEMPORAL_NAMESPACE set to another namespace, does not report the waiting workflow "not running" and forget it', async () => {
    const taskQueue = uniqueName('tq');
    let bodies = 0;
    const activities = {
      placeCall: async () => {
        if (++bodies === 1) throw new OutcomeUnknownError('line dropped');
        return { id: 'placed' };
      },
    };
    const interceptors = { activity: idempotencyInterceptors({ store: schema.store }) };
    await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      const handle = await temporal.client.workflow.start('resumableCallActivity', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'placeCall', args: [] }],
      });
      const { key } = await waitingOn(handle);
      // The operator's shell still has TEMPORAL_NAMESPACE from other work (the temporal CLI reads it too).
      const released = await runCli(['release', key, '--schema', schema.name], {
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TEMPORAL_NAMESPACE: 'payments-staging',
      });
      // The claim's own namespace wins: the workflow is signalled where it runs, and calls again for real.
      expect(released.stderr).not.toMatch(/is not running/);
      expect(released.stderr).toContain(`Signalled workflow ${handle.workflowId}: released.`);
      expect(released.code).toBe(0);
      expect(await handle.result()).toEqual([{ id: 'placed' }]);
      expect(bodies).toBe(2);
    });
  });
});
