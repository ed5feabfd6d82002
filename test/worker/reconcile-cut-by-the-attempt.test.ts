/**
 * Found in review: a reconcile cut short by the attempt's own time running out is refused non-retryably,
 * though 84ba034 and the README say "an attempt cancelled while its reconciler asks (a worker stopped
 * for a deploy, a timeout) is not refused: the claim stays unknown … and the next attempt asks again".
 *
 * The interceptor bounds the reconcile by `min(reconcileTimeoutMs, waitDeadline())`, and
 * `waitDeadline()` ends one second before the attempt's start-to-close timeout. So when the vendor's
 * lookup is slow and the attempt's time runs out, the interceptor's own timer fires first, the answer
 * is "reconcile gave no answer within N ms", the attempt's cancellation signal is not (yet) aborted,
 * and the `interrupted` branch is skipped: IdempotencyOrphanedClaim, non-retryable, a person paged,
 * for a vendor that was only slow for a moment. reconcileTimeoutMs (30 s by default) was never reached.
 *
 * Real Postgres, real Temporal: the first attempt's call ends ambiguously (the claim is kept
 * `unknown` and Temporal retries, as the README promises for activities with a reconcile); the second
 * attempt's reconcile meets a lookup that takes 5 s on a 3 s start-to-close; a third would be answered.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { OutcomeUnknownError, idempotencyInterceptors } from '../../src/index.js';
import type { Reconciliation } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

describe('a reconcile that the attempt\'s own deadline cuts short', () => {
  it('ends the attempt retryably with the claim kept unknown, and the next attempt asks again', async () => {
    let bodies = 0;
    let asked = 0;
    const activities = {
      chargeCard: async () => {
        bodies++;
        throw new OutcomeUnknownError('the connection dropped after the charge was sent');
      },
    };
    const reconcile = async ({ signal }: { signal: AbortSignal }): Promise<Reconciliation> => {
      asked++;
      if (asked === 1) {
        // The vendor's lookup API is slow for a moment: 5 s (it honours the abort signal).
        await sleep(5_000, undefined, { signal }).catch(() => undefined);
        return { outcome: 'unknown', reason: 'aborted' };
      }
      return { outcome: 'happened', result: { id: 'ch_1', status: 'succeeded' } };
    };
    const taskQueue = uniqueName('tq');
    const interceptors = { activity: idempotencyInterceptors({ store: schema.store, activities: { chargeCard: { reconcile } } }) };
    const outcome = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      const handle = await temporal.client.workflow.start('callActivity', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'chargeCard', args: [{ amountCents: 1_200 }], startToCloseTimeoutMs: 3_000, maximumAttempts: 5 }],
      });
      return handle.result().then(
        (result) => ({ result }),
        (error: unknown) => {
          const failure = (error as { cause?: { cause?: { type?: string; message?: string; nonRetryable?: boolean } } }).cause?.cause;
          return { failedWith: failure?.type, nonRetryable: failure?.nonRetryable, message: failure?.message };
        },
      );
    });
    // Before a fix: { failedWith: 'IdempotencyOrphanedClaim', nonRetryable: true, message: '… reconcile gave no answer within ~1900 ms …' }.
    expect(outcome, JSON.stringify(outcome)).toEqual({ result: [{ id: 'ch_1', status: 'succeeded' }] });
    expect(bodies).toBe(1);
    expect(asked).toBe(2);
  });
});
