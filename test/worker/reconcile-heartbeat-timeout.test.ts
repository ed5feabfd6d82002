/**
 * Found in review: RECONCILE_ROUNDS (688f4c6) bounds the questions cut short by the attempt's START-TO-CLOSE
 * time; README: "once reconcileTimeoutMs itself runs out, nobody can tell and the refusal stands".
 * But the interceptor does not heartbeat while `reconcile` asks the vendor (it does while it waits
 * for a live owner), so an activity type with a heartbeat timeout shorter than reconcileTimeoutMs
 * (any long-running write that heartbeats: a phone call, a batch payout) is timed out by Temporal
 * while its reconciler is still asking. The worker is not told; when reconcileTimeoutMs runs out the
 * attempt refuses (non-retryable IdempotencyOrphanedClaim) into the void: Temporal already gave up on
 * that attempt and started the next, which waits for the taker (heartbeating), finds the claim
 * `unknown`, takes it over, asks again without heartbeating, is timed out again… for ever under the
 * default retry policy. The refusal never reaches the workflow, nobody is paged, rounds are never
 * counted (the refusal's note carries no `unfinishedReconciles`), and the vendor's lookup API is
 * hammered every few seconds: the stranded workflow 9142915 fixed, by another door.
 *
 * Real Postgres, real Temporal (its own small workflow bundle: one activity with heartbeatTimeout 2 s).
 */
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { DefaultLogger, Worker, bundleWorkflowCode } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { OutcomeUnknownError, idempotencyInterceptors } from '../../src/index.js';
import type { Reconciliation } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

describe('an activity with a heartbeat timeout whose reconcile outlasts it', () => {
  it('ends in the refusal once reconcileTimeoutMs ran out, instead of being retried for ever', { timeout: 150_000 }, async () => {
    let calls = 0;
    let questions = 0;
    const activities = {
      chargeCard: async () => {
        calls++;
        throw new OutcomeUnknownError('the connection dropped after the charge request was written');
      },
    };
    // The vendor's lookup API hangs (it honours the signal).
    const reconcile = async ({ signal }: { signal: AbortSignal }): Promise<Reconciliation> => {
      questions++;
      await sleep(60_000, undefined, { signal }).catch(() => undefined);
      return { outcome: 'unknown', reason: 'the lookup API did not answer' };
    };
    const taskQueue = uniqueName('tq');
    const interceptors = {
      activity: idempotencyInterceptors({ store: schema.store, reconcileTimeoutMs: 4_000, activities: { chargeCard: { reconcile } } }),
    };
    const workflowBundle = await bundleWorkflowCode({
      workflowsPath: fileURLToPath(new URL('./fixtures/heartbeat-timeout-workflow.ts', import.meta.url)),
      logger: new DefaultLogger('WARN'),
    });
    const worker = await Worker.create({ connection: temporal.nativeConnection, taskQueue, workflowBundle, activities, interceptors });
    const outcome = await worker.runUntil(async () => {
      const handle = await temporal.client.workflow.start('chargeWithHeartbeatTimeout', { taskQueue, workflowId: uniqueName('wf'), args: [900] });
      // One call, then one question of 4 s: the refusal should be in the workflow's hands well within 40 s.
      const settled = await Promise.race([
        handle.result().then(
          () => ({ failedWith: 'nothing: it completed' }),
          (error: unknown) => ({ failedWith: (error as { cause?: { cause?: { type?: string } } }).cause?.cause?.type ?? String(error) }),
        ),
        sleep(40_000).then(() => undefined),
      ]);
      if (settled) return settled;
      const attempt = (await handle.describe()).raw.pendingActivities?.[0]?.attempt;
      await handle.terminate('test cleanup');
      return { stillRetryingAfter40s: true, attempt, questions };
    });
    expect(calls).toBe(1);
    // Before a fix: { stillRetryingAfter40s: true, attempt: 12, questions: 10 }: each attempt asks the vendor, is timed out
    // by its heartbeat while asking, and its refusal is dropped by Temporal; the next takes the claim over and asks again.
    expect(outcome, JSON.stringify(outcome)).toEqual({ failedWith: 'IdempotencyOrphanedClaim' });
  });
});
