/**
 * Found in review: a paused owner whose late record commits but whose answer is lost (a Postgres restart,
 * a cut connection: what the chaos run does twice a run) tells nobody, and says someone else
 * changed its claim.
 *
 * `CallSettlement.succeeded` retries `complete`; the retry finds the row already `completed` (by
 * its own first try) and returns false, so `recorded === false`: the worker logs "the claim was
 * changed by someone else while the call ran; did not record its result" (it did record it) and
 * skips `tellWaitersOfOutcome`. The workflow refused on the key meanwhile waits in `resumable()`
 * until a person runs `resume`: the stranding f305df0 set out to end.
 *
 * Real Postgres (the complete statement runs and commits; only its answer is taken away), real
 * Temporal. Doctored: withheld lease renewals (a long pause) and the one lost answer.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, inject, it } from 'vitest';
import pg from 'pg';
import { Context } from '@temporalio/activity';
import { PostgresClaimStore, idempotencyInterceptors } from '../../src/index.js';
import type { ClaimStore, HeldClaim } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { waitingOn } from '../support/pending-refusal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

/** A real pool whose next `complete` commits and then loses its answer. */
function losingPool(): { pool: pg.Pool; loseNextRecordAnswer: () => void } {
  const real = new pg.Pool({ connectionString: inject('databaseUrl') });
  real.on('error', () => undefined);
  let lose = false;
  const query = async (config: unknown, values?: unknown) => {
    const name = (config as { name?: string }).name ?? '';
    const result = await (real.query as (c: unknown, v?: unknown) => Promise<pg.QueryResult>)(config, values);
    if (lose && name.endsWith('_complete')) {
      lose = false;
      throw new Error('Connection terminated unexpectedly');
    }
    return result;
  };
  const pool = new Proxy(real, { get: (target, prop, receiver) => (prop === 'query' ? query : Reflect.get(target, prop, receiver)) });
  return { pool, loseNextRecordAnswer: () => void (lose = true) };
}

describe('a paused owner whose late record loses its answer', () => {
  it('still tells the workflow refused on the key meanwhile', async () => {
    const { pool, loseNextRecordAnswer } = losingPool();
    const base = new PostgresClaimStore({ pool, schema: schema.name });
    const paused = new Set<string>();
    const store: ClaimStore = Object.assign(Object.create(base) as ClaimStore, {
      renewLeases: (claims: readonly HeldClaim[], leaseMs: number) => base.renewLeases(claims.filter((claim) => !paused.has(claim.token)), leaseMs),
    });
    const taskQueue = uniqueName('tq');
    let wake: (() => void) | undefined;
    let bodies = 0;
    const activities = {
      placeCall: async () => {
        bodies++;
        const { rows } = await schema.pool.query<{ token: string }>(`SELECT token FROM "${schema.name}".claims WHERE workflow_id = $1`, [
          Context.current().info.workflowExecution!.workflowId,
        ]);
        paused.add(rows[0]!.token);
        await new Promise<void>((resolve) => (wake = resolve));
        loseNextRecordAnswer(); // Postgres restarts as the record commits
        return { id: 'placed_by_the_paused_owner' };
      },
    };
    const interceptors = { activity: idempotencyInterceptors({ store, leaseMs: 1_500 }) };
    try {
      const outcome = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
        const handle = await temporal.client.workflow.start('resumableCallActivity', {
          taskQueue,
          workflowId: uniqueName('wf'),
          args: [{ activity: 'placeCall', args: [], startToCloseTimeoutMs: 2_500 }],
        });
        const pending = await waitingOn(handle);
        wake!();
        for (let i = 0; i < 100 && (await schema.store.get(pending.key))?.state !== 'completed'; i++) await sleep(100);
        expect((await schema.store.get(pending.key))?.state).toBe('completed'); // recorded: the call happened
        const result = await Promise.race([handle.result(), sleep(15_000).then(() => 'still waiting in resumable() after 15 s' as const)]);
        if (typeof result === 'string') await handle.terminate('test cleanup');
        return result;
      });
      expect(outcome).toEqual([{ id: 'placed_by_the_paused_owner' }]);
      expect(bodies).toBe(1);
    } finally {
      await (pool as pg.Pool).end();
    }
  });
});
