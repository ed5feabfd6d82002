/**
 * Found in review: an attempt that notes itself as waiting on a key and then, because the claim was settled
 * meanwhile (cc0f8b0, f305df0: `addWaiter` resolves `completed` or gone), is answered or claims the
 * key instead of being refused, leaves its waiter row behind, never told. Nobody will ever tell it
 * (it was never refused, nothing waits in `resumable()`), so:
 *
 * - `prune` keeps the key's completed record for ever: "a waiter that was never told of a decision
 *   … may still call again and must find the record", and the row is never cleaned up either
 *   (only waiters told before the horizon are);
 * - `show KEY` lists the workflow under `waiting_workflows`, and `resume KEY` would signal it, though
 *   it finished long ago: the engineer on call is sent after a workflow that waits for nothing.
 *
 * Real Postgres, real Temporal; as in waiters-told-after-a-late-record.test.ts test, the owner pauses past its lease (renewals
 * withheld) and is woken from inside `addWaiter`, so its result lands between the next attempt's
 * read of the lapsed claim and its note.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { Context } from '@temporalio/activity';
import { ClaimOperations, idempotencyInterceptors } from '../../src/index.js';
import type { ClaimStore, HeldClaim, Waiter } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

async function ownTokenOf(workflowId: string): Promise<string> {
  const { rows } = await schema.pool.query<{ token: string }>(`SELECT token FROM "${schema.name}".claims WHERE workflow_id = $1`, [workflowId]);
  return rows[0]!.token;
}

describe('an attempt answered from a record that landed while it noted itself as waiting', () => {
  it('is not left on record as a waiting workflow that keeps the record from prune for ever', async () => {
    const taskQueue = uniqueName('tq');
    const paused = new Set<string>();
    let wake: (() => void) | undefined;
    let recorded: Promise<boolean> | undefined;
    let noted: unknown;
    let bodies = 0;
    const store: ClaimStore = Object.assign(Object.create(schema.store) as ClaimStore, {
      renewLeases: (claims: readonly HeldClaim[], leaseMs: number) => schema.store.renewLeases(claims.filter((claim) => !paused.has(claim.token)), leaseMs),
      complete: (...args: Parameters<ClaimStore['complete']>) => (recorded = schema.store.complete(...args)),
      addWaiter: async (waiter: Waiter) => {
        // The paused owner records its result between this attempt's read of the lapsed claim and its note.
        wake?.();
        for (let i = 0; i < 100 && recorded === undefined; i++) await sleep(50);
        await recorded;
        noted = await schema.store.addWaiter(waiter);
        return noted as Awaited<ReturnType<ClaimStore['addWaiter']>>;
      },
    });
    const activities = {
      chargeCard: async () => {
        bodies++;
        paused.add(await ownTokenOf(Context.current().info.workflowExecution!.workflowId)); // a long pause: the lease lapses
        await new Promise<void>((resolve) => (wake = resolve));
        return { id: 'ch_once' };
      },
    };
    const interceptors = { activity: idempotencyInterceptors({ store, leaseMs: 1_500 }) };
    const workflowId = uniqueName('wf');
    const result = await temporal.withWorker({ taskQueue, activities, interceptors }, async () =>
      temporal.client.workflow.execute('callActivity', {
        taskQueue,
        workflowId,
        args: [{ activity: 'chargeCard', args: [{ amountCents: 700 }], startToCloseTimeoutMs: 2_500, maximumAttempts: 5 }],
      }),
    );
    expect(noted).toEqual({ claimState: 'completed' }); // answered from the record, never refused
    expect(result).toEqual([{ id: 'ch_once' }]);
    expect(bodies).toBe(1);

    const operations = new ClaimOperations(schema.pool, { schema: schema.name });
    const [{ key }] = (await schema.pool.query<{ key: string }>(`SELECT key FROM "${schema.name}".claims`)).rows as [{ key: string }];
    const waiting = (await operations.waitersOf(key)).map((waiter) => waiter.workflowId);
    // Two hours from now, with a one-hour horizon: the workflow finished, nobody waits, the record is past it.
    const pruned = await operations.prune(3_600_000, { asOf: new Date(Date.now() + 2 * 3_600_000), reason: 'test' });
    // Before a fix: { waiting: [workflowId] (never told, never refused), pruned: 0 } — and so at every later prune.
    expect({ waiting, pruned }).toEqual({ waiting: [], pruned: 1 });
  });
});
