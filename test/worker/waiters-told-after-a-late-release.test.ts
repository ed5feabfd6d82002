/**
 * Found in review: a paused owner that settles late by RELEASING its claim (its call failed definitely:
 * nothing happened) leaves the workflows refused on the key stranded.
 *
 * f305df0 taught the owner's worker to tell the waiters when it records a result late, and taught
 * `addWaiter` to resolve with the claim's state so an attempt refused "while the owner records" gets
 * the result instead. Both only look at `completed`:
 *
 * 1. The owner's `release` (a definite failure after its lease lapsed) tells nobody: the waiting
 *    workflow sits in `resumable()` for ever, though nothing happened and the call may simply run.
 *    The operator's `resume KEY` cannot help either: the claim is gone and no release is on the
 *    operator trail, so `resume` refuses (ClaimNotFound) and asks for `release-absent`.
 * 2. `addWaiter` resolving with `claimState: null` (documented "no claim") still ends in a
 *    non-retryable IdempotencyOrphanedClaim: an attempt that found the lapsed claim and noted
 *    itself just after the owner released it is refused for a key that has no claim at all.
 *
 * Real Postgres, real Temporal. The only doctoring: the owner's lease renewals are withheld (a long
 * GC pause), and in (2) the owner is woken from inside `addWaiter` so its release lands between the
 * attempt's read and its note, an interleaving that needs no help under load.
 */
import { describe, expect, inject, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import { IdempotencyOrphanedClaim, idempotencyInterceptors } from '../../src/index.js';
import type { ClaimStore, HeldClaim, Waiter } from '../../src/index.js';
import { within } from '../support/partitions.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { waitingOn } from '../support/pending-refusal.js';
import { runCli } from '../support/cli.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const cli = (...args: string[]) => runCli([...args, '--schema', schema.name], { TEMPORAL_ADDRESS: inject('temporalAddress') });

/** The store, with renewals withheld for the tokens in `paused` (the owner is in a long pause). */
function pausableStore(overrides: Partial<ClaimStore> = {}): { store: ClaimStore; paused: Set<string> } {
  const paused = new Set<string>();
  const store: ClaimStore = Object.assign(Object.create(schema.store) as ClaimStore, {
    renewLeases: (claims: readonly HeldClaim[], leaseMs: number) => schema.store.renewLeases(claims.filter((claim) => !paused.has(claim.token)), leaseMs),
    ...overrides,
  });
  return { store, paused };
}

async function ownTokenOf(workflowId: string): Promise<string> {
  const { rows } = await schema.pool.query<{ token: string }>(`SELECT token FROM "${schema.name}".claims WHERE workflow_id = $1`, [workflowId]);
  return rows[0]!.token;
}


describe('a paused owner that releases its claim late', () => {
  it('tells the workflow refused on the key meanwhile, which then calls for real: not left waiting for ever', async () => {
    // Two workflows share one custom key (one order's call, asked for by both). The owner pauses within its
    // start-to-close (so Temporal does not cancel it: a definite error stays definite) but past its lease, and
    // the other workflow, finding the lapsed claim, is refused. Then the owner's call fails definitely.
    const taskQueue = uniqueName('tq');
    const ref = uniqueName('order');
    let wake: (() => void) | undefined;
    let bodies = 0;
    const { store, paused } = pausableStore();
    const activities = {
      placeCall: async (_call: { ref: string }) => {
        bodies++;
        if (bodies === 1) {
          paused.add(await ownTokenOf(Context.current().info.workflowExecution!.workflowId)); // a long pause: the lease lapses
          await new Promise<void>((resolve) => (wake = resolve));
          // The vendor answered 400 (the number was malformed): nothing happened, the claim is released.
          throw new Error('vendor said 400: nothing was placed');
        }
        return { id: 'placed_once' };
      },
    };
    const interceptors = {
      activity: idempotencyInterceptors({ store, leaseMs: 1_500, activities: { placeCall: { key: ({ args }) => args[0].ref } } }),
    };
    const outcome = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      const owner = await temporal.client.workflow.start('callActivity', {
        taskQueue,
        workflowId: uniqueName('wf-owner'),
        args: [{ activity: 'placeCall', args: [{ ref }], startToCloseTimeoutMs: 60_000, maximumAttempts: 2 }],
      });
      for (let i = 0; i < 100 && wake === undefined; i++) await sleep(50);
      await sleep(2_000); // past the owner's 1.5 s lease
      const waiter = await temporal.client.workflow.start('resumableCallActivity', {
        taskQueue,
        workflowId: uniqueName('wf-waiter'),
        args: [{ activity: 'placeCall', args: [{ ref }] }],
      });
      const pending = await waitingOn(waiter); // refused: the owner's lease lapsed
      wake!(); // the paused owner wakes, its call fails definitely, and it releases the claim
      const result = await within(waiter.result(), 15_000, 'the workflow is still waiting in resumable() for a decision nobody will send').catch(
        async (error: Error) => {
          // What the engineer on call finds: `resume` refuses, because the claim is gone and no release is on the trail.
          const resumed = await cli('resume', pending.key);
          await waiter.terminate('test cleanup');
          return { stranded: error.message, resumeExitCode: resumed.code, resumeSays: resumed.stderr.trim().split('\n').slice(-2).join(' ') };
        },
      );
      // The owner's workflow retries its definite failure: answered from the waiter's record, not called again.
      return { result, owner: await owner.result() };
    });
    expect(outcome).toEqual({ result: [{ id: 'placed_once' }], owner: [{ id: 'placed_once' }] });
    expect(bodies).toBe(2);
  });

  it('lets an attempt whose claim was released while it noted itself as waiting claim the key, not refuse it as orphaned', async () => {
    const taskQueue = uniqueName('tq');
    let wake: (() => void) | undefined;
    let released: Promise<boolean> | undefined;
    let bodies = 0;
    let noted: unknown;
    const { store, paused } = pausableStore({
      release: (claim) => (released = schema.store.release(claim)),
      addWaiter: async (waiter: Waiter) => {
        // The owner's release lands between this attempt's read of the lapsed claim and its note.
        wake?.();
        await new Promise((resolve) => setTimeout(resolve, 50));
        for (let i = 0; i < 100 && released === undefined; i++) await sleep(50);
        await released;
        noted = await schema.store.addWaiter(waiter);
        return noted as Awaited<ReturnType<ClaimStore['addWaiter']>>;
      },
    });
    const activities = {
      chargeCard: async () => {
        bodies++;
        if (bodies === 1) {
          paused.add(await ownTokenOf(Context.current().info.workflowExecution!.workflowId));
          await new Promise<void>((resolve) => (wake = resolve));
          throw new Error('card declined (402): nothing was charged');
        }
        return { id: 'ch_once' };
      },
    };
    const interceptors = { activity: idempotencyInterceptors({ store, leaseMs: 1_500 }) };
    const outcome = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      const handle = await temporal.client.workflow.start('callActivity', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'chargeCard', args: [{ amountCents: 700 }], startToCloseTimeoutMs: 2_500, maximumAttempts: 5 }],
      });
      return handle.result().then(
        (result) => ({ result }),
        (error: unknown) => ({ failedWith: (error as { cause?: { cause?: { type?: string } } }).cause?.cause?.type }),
      );
    });
    expect(noted).toEqual({ claimState: null }); // the store said it: there is no claim on this key
    // Before a fix: { failedWith: 'IdempotencyOrphanedClaim' }, non-retryable, for a key nobody holds and a charge never made.
    expect(outcome, JSON.stringify(outcome)).not.toEqual({ failedWith: IdempotencyOrphanedClaim });
    expect(outcome).toEqual({ result: [{ id: 'ch_once' }] });
    expect(bodies).toBe(2);
  });
});
