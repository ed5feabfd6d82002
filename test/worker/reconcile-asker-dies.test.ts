/**
 * Found in review: 688f4c6 (ClaimStore.handBack) keeps the orphaned call's identity on record only when the
 * attempt that took the claim over to ask the vendor ENDS NORMALLY and its hand-back reaches
 * Postgres. `takeOver` still overwrites the orphan's token, attempt, worker, claimed_at and workflow
 * ids and clears its note, and nothing else keeps them. When the asking attempt cannot hand back (its
 * worker is killed mid-question: a deploy's SIGKILL, an OOM; or it loses Postgres for recordRetryMs,
 * and unlike a record the hand-back is not tried on in the background), the claim stays `claimed`
 * under the TAKER, its lease lapses, and the next attempt takes over an "orphan" that never called:
 *
 * - its `reconcile` is handed `claim` = the taker (attempt 2, claimedAt after the real call, no note):
 *   a lookup bounded by it ("charges since claim.claimedAt") misses the charge and answers
 *   not-happened, and the call is made again;
 * - the refusal the person on call finally gets names attempt 2 at a time no call was made, and
 *   "reconcile could not tell about the call of attempt 2": exactly the defect fixed in 8192ad9, which
 *   688f4c6 was meant to close.
 *
 * Real Postgres, real Temporal. Attempt 1's call ends ambiguously; attempt 2's question outlasts its
 * 3 s start-to-close, and its store is cut off (as a killed worker's would be) when the question is cut
 * short, for longer than recordRetryMs; attempt 3's question answers `unknown`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type pg from 'pg';
import { OutcomeUnknownError, PostgresClaimStore, idempotencyInterceptors } from '../../src/index.js';
import type { Claim, Reconciliation } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

/** The real pool, cut off from Postgres while `cut` is set. */
function severablePool(real: pg.Pool): { pool: pg.Pool; cut: (value: boolean) => void } {
  let cut = false;
  const query = async (config: unknown, values?: unknown) => {
    if (cut) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    return real.query(config as pg.QueryConfig, values as unknown[]);
  };
  const pool = new Proxy(real, {
    get(target, property) {
      if (property === 'query') return query;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { pool, cut: (value) => void (cut = value) };
}

describe('an attempt that took an orphan over to ask the vendor, and could not give it back', () => {
  it('leaves the call that was made on record for the next reconcile and the refusal', async () => {
    let calledAt: Date | undefined;
    const handedClaims: Pick<Claim, 'attempt' | 'claimedAt'>[] = [];
    const { pool, cut } = severablePool(schema.pool);
    const store = new PostgresClaimStore({ pool, schema: schema.name });
    const activities = {
      chargeCard: async () => {
        calledAt = new Date();
        throw new OutcomeUnknownError('the connection dropped after the charge was sent');
      },
    };
    const reconcile = async ({ claim, signal }: { claim: Claim; signal: AbortSignal }): Promise<Reconciliation> => {
      handedClaims.push({ attempt: claim.attempt, claimedAt: claim.claimedAt });
      if (handedClaims.length === 1) {
        await sleep(10_000, undefined, { signal }).catch(() => undefined); // the vendor's lookup API is slow
        // The attempt's time is up: as if its worker were killed now, nothing it writes reaches Postgres for a while.
        cut(true);
        setTimeout(() => cut(false), 1_500);
        return { outcome: 'unknown', reason: 'aborted' };
      }
      return { outcome: 'unknown', reason: 'the lookup API cannot find requests by key' };
    };
    const taskQueue = uniqueName('tq');
    const interceptors = {
      activity: idempotencyInterceptors({ store, leaseMs: 2_000, recordRetryMs: 500, activities: { chargeCard: { reconcile } } }),
    };
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
    expect(refusal?.type).toBe('IdempotencyOrphanedClaim');
    expect(handedClaims.length).toBeGreaterThanOrEqual(2);
    // Before a fix: the second reconcile is handed { attempt: 2, claimedAt: <seconds after the call> }, and the refusal names
    // "attempt 4 … claimed key … (reconcile could not tell about the call of attempt 2 … at <after the call>)": attempt 1 is named nowhere.
    const second = handedClaims[1]!;
    expect({ attempt: second.attempt, claimedNoLaterThanTheCall: second.claimedAt.getTime() <= calledAt!.getTime(), message: refusal?.message }).toMatchObject({
      attempt: 1,
      claimedNoLaterThanTheCall: true,
      message: expect.stringMatching(/attempt 1\b/),
    });
  });
});
