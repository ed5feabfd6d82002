/**
 * Found in review: 7d34bb8 made a reconcile cut short by the attempt's own start-to-close end retryably
 * (IdempotencyClaimBusy, reason `reconcile-unfinished`) "so the next attempt asks again". It never
 * asks whether the next attempt can do any better. With a start-to-close shorter than
 * `reconcileTimeoutMs` (30 s by default, longer than most API calls' start-to-close), EVERY attempt
 * is "cut by the attempt": `reconcileTimeoutMs` is never reached, so the README's "a reconciler that
 * takes longer than reconcileTimeoutMs: the refusal stands" never happens.
 *
 * A vendor whose lookup endpoint hangs (its status API is down with connections that never answer)
 * is therefore asked again and again, for as long as the retry policy allows: under Temporal's
 * default policy (unlimited attempts) for ever. No IdempotencyOrphanedClaim is ever raised, so
 * nothing pages a person, `resumable()` never shows a refused call waiting for an operator, and
 * the only trace is a retryable "busy" failure that runbooks treat as transient. Before 7d34bb8
 * the same vendor was refused on the second attempt and a person looked at it.
 *
 * Real Postgres, real Temporal: the first call ends ambiguously (the claim is kept `unknown`, and
 * Temporal retries as the README promises for activities with a reconcile); from then on the
 * vendor's lookup never answers (it honours the abort signal). As good as unlimited attempts (1000), as by default.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { OutcomeUnknownError, idempotencyInterceptors } from '../../src/index.js';
import type { Reconciliation } from '../../src/index.js';
import { PENDING_REFUSALS_QUERY } from '../../src/operator-decision.js';
import type { PendingRefusal } from '../../src/workflow/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

describe('a vendor whose lookup never answers, on activities with a start-to-close under reconcileTimeoutMs', () => {
  it('is refused as orphaned (a person is paged, the workflow waits in resumable()), not retried as busy for ever', async () => {
    let bodies = 0;
    let asked = 0;
    const activities = {
      chargeCard: async () => {
        bodies++;
        throw new OutcomeUnknownError('the connection dropped after the charge was sent');
      },
    };
    // The vendor's lookup hangs: no answer, ever (it honours the abort signal, as the README asks).
    const reconcile = async ({ signal }: { signal: AbortSignal }): Promise<Reconciliation> => {
      asked++;
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      return { outcome: 'unknown', reason: 'aborted' };
    };
    const taskQueue = uniqueName('tq');
    const interceptors = { activity: idempotencyInterceptors({ store: schema.store, activities: { chargeCard: { reconcile } } }) };
    const seen = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      const handle = await temporal.client.workflow.start('resumableCallActivity', {
        taskQueue,
        workflowId: uniqueName('wf'),
        // 3 s start-to-close (reconcileTimeoutMs is the default 30 s); maximumAttempts 1000: as good as unlimited, Temporal's default.
        args: [{ activity: 'chargeCard', args: [{ amountCents: 1_200 }], startToCloseTimeoutMs: 3_000, maximumAttempts: 1_000 }],
      });
      let refused: { type?: string | null } | undefined;
      let lastFailure: { type?: string | null; message?: string | null } | undefined;
      let attempt = 0;
      // 40 s: about ten attempts, each asking the vendor for ~2 s, a second apart. A refusal as orphaned
      // fails the activity (non-retryable): it leaves the pending activities, and resumable() waits.
      for (const deadline = Date.now() + 40_000; Date.now() < deadline && refused === undefined; await sleep(500)) {
        const { raw } = await handle.describe();
        const pending = raw.pendingActivities?.[0];
        if (pending) {
          attempt = pending.attempt ?? attempt;
          const info = pending.lastFailure?.applicationFailureInfo;
          if (info) lastFailure = { type: info.type, message: pending.lastFailure?.message };
        } else if (attempt > 0) {
          refused = { type: 'left the pending activities' };
        }
      }
      let waitingOn: PendingRefusal | undefined;
      if (refused) [waitingOn] = await handle.query<PendingRefusal[]>(PENDING_REFUSALS_QUERY).catch(() => [undefined]);
      await handle.terminate('test cleanup');
      return { waitingOn: refused !== undefined && waitingOn?.key !== undefined, attempt, lastFailure };
    });
    const claim = (await schema.pool.query<{ state: string }>(`SELECT state FROM "${schema.name}".claims`)).rows;
    expect(bodies).toBe(1); // never called twice: the break is the silence, not a double call
    expect(claim).toEqual([{ state: 'unknown' }]);
    // Before a fix: { waitingOn: false, attempt: 15, lastFailure: { type: 'IdempotencyClaimBusy', message: '… reconcile gave no answer
    // within 1984 ms). Nothing was called; Temporal will retry, and the next attempt asks the vendor again.' } }; `asked` grows each attempt.
    expect({ waitingOn: seen.waitingOn, asked: asked > 3 ? 'every attempt' : asked }, JSON.stringify(seen)).toEqual({
      waitingOn: true,
      asked: expect.anything(),
    });
  });
});
