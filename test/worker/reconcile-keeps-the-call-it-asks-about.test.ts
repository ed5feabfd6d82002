/**
 * Found in review: each unfinished reconcile (7d34bb8: cut short by the attempt's own time, the claim kept
 * `unknown`, Temporal retries) leaves the claim under the TAKER's identity: `takeOver` rewrote
 * attempt, worker, claimed_at and cleared the outcome note, and the unfinished attempt's note names
 * only the claim it took over. After two such rounds nothing on record says which attempt made the
 * call, on which worker, when, or why its outcome is unknown:
 *
 * - the next `reconcile` is handed `claim` = the previous taker ("the orphaned claim as it was
 *   found: which attempt on which worker claimed it, when"), an attempt that never called the
 *   vendor, with a claimedAt after the real call: a lookup bounded by it ("charges created since
 *   claim.claimedAt") misses the real charge;
 * - the refusal a person finally gets names that attempt and that time ("attempt 3 on worker … claimed
 *   key … at <after the call> … Check the vendor"): the engineer on call looks for a charge at a
 *   time when none was made, finds none, and `release`s: the charge is made a second time.
 *
 * Real Postgres, real Temporal. The first attempt's call ends ambiguously; the next two attempts'
 * lookups are slow (5 s on a 3 s start-to-close); the fourth's lookup answers `unknown`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { OutcomeUnknownError, idempotencyInterceptors } from '../../src/index.js';
import type { Claim, Reconciliation } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

describe('a claim whose reconcile was cut short twice', () => {
  it('still tells the next reconcile, and the person paged, which attempt made the call and when', async () => {
    let calledAt: Date | undefined;
    let calledByAttempt: number | undefined;
    const handedClaims: Pick<Claim, 'attempt' | 'claimedAt'>[] = [];
    const activities = {
      chargeCard: async () => {
        const { Context } = await import('@temporalio/activity');
        calledAt = new Date();
        calledByAttempt = Context.current().info.attempt;
        throw new OutcomeUnknownError('the connection dropped after the charge was sent');
      },
    };
    const reconcile = async ({ claim, signal }: { claim: Claim; signal: AbortSignal }): Promise<Reconciliation> => {
      handedClaims.push({ attempt: claim.attempt, claimedAt: claim.claimedAt });
      if (handedClaims.length <= 2) {
        await sleep(5_000, undefined, { signal }).catch(() => undefined); // the vendor's lookup API is slow for a while
        return { outcome: 'unknown', reason: 'aborted' };
      }
      return { outcome: 'unknown', reason: 'the lookup API cannot find requests by key' };
    };
    const taskQueue = uniqueName('tq');
    const interceptors = { activity: idempotencyInterceptors({ store: schema.store, activities: { chargeCard: { reconcile } } }) };
    const refusal = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      const handle = await temporal.client.workflow.start('callActivity', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'chargeCard', args: [{ amountCents: 1_200 }], startToCloseTimeoutMs: 3_000, maximumAttempts: 10 }],
      });
      return handle.result().then(
        () => undefined,
        (error: unknown) => (error as { cause?: { cause?: { type?: string; message?: string } } }).cause?.cause,
      );
    });
    expect(calledByAttempt).toBe(1);
    expect(refusal?.type).toBe('IdempotencyOrphanedClaim');
    expect(handedClaims).toHaveLength(3);
    // Before a fix: the third reconcile is handed { attempt: 3, claimedAt: <seconds after the call> }, and the refusal says
    // "attempt 4 on worker vm/21723 claimed key … at 07:02:57.529Z and marked its outcome unknown (reconcile could not tell
    // about the call of attempt 3 on worker vm/21723 at 07:02:55.289Z) … Check the vendor": attempt 1, which made the call
    // (at about 07:02:50), and why its outcome was unknown, are named nowhere.
    const last = handedClaims[2]!;
    expect({ attempt: last.attempt, claimedNoLaterThanTheCall: last.claimedAt.getTime() <= calledAt!.getTime() }).toEqual({
      attempt: 1,
      claimedNoLaterThanTheCall: true,
    });
    expect(refusal?.message).toMatch(/attempt 1\b/);
  });
});
