/**
 * Found in review, on `resumable()`: on the pass after an operator's decision, the closure's calls may not be
 * the first pass's calls in the first pass's order (a charge added by a signal while it waited, taken
 * in priority order; ids that are UUIDs; two identical charges under `call` scope). Whatever the
 * closure schedules, no charge is made twice and none is answered with another charge's receipt:
 * a call that cannot be told apart from the refused one is refused by name.
 *
 * Broke earlier builds: one (the refused key, carried to the nth charge, answered another charge with the
 * resolved receipt); the next (arguments "alike" because both held a UUID were answered with the
 * other's receipt; under `call` scope, calls keyed by their place's first activity id were charged
 * again when the places moved, and an identical charge in the refused place was swallowed).
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { OutcomeUnknownError, idempotencyInterceptors } from '../../src/index.js';
import type { RefusalDetails } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { runCli } from '../support/cli.js';
import { waitingOn } from '../support/pending-refusal.js';
import { activityFailureOf } from '../support/failures.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

interface Charge {
  readonly order: string;
  readonly priority: number;
}

/**
 * Runs `resumableByPriority` over `charges`; the charge for `refused` loses its answer once (its
 * `refusedCall`th charge, the first by default). While the
 * workflow waits, `added` comes in by signal; the operator resolves the refused charge. Returns what the
 * gateway charged and how the workflow ended.
 */
async function chargeInPriorityOrder(setup: {
  charges: Charge[];
  /** The order whose charge loses its answer; none: the workflow is expected to end on its own. */
  refused?: string;
  refusedCall?: number;
  added?: Charge;
  settings?: Parameters<typeof idempotencyInterceptors>[0]['activities'];
}): Promise<{ charged: string[]; ended: Promise<unknown> }> {
  const taskQueue = uniqueName('tq');
  const charged: string[] = [];
  let refusedOrderCalls = 0;
  const activities = {
    charge: async ({ order }: { order: string }) => {
      if (order === setup.refused && ++refusedOrderCalls === (setup.refusedCall ?? 1)) {
        charged.push(order);
        throw new OutcomeUnknownError('gateway timeout after the request went out');
      }
      charged.push(order);
      return { order, receipt: `r_${order}` };
    },
  };
  const interceptors = { activity: idempotencyInterceptors({ store: schema.store, activities: setup.settings }) };
  const ended = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
    const handle = await temporal.client.workflow.start('resumableByPriority', {
      taskQueue,
      workflowId: uniqueName('wf'),
      args: [{ activity: 'charge', charges: setup.charges }],
    });
    if (setup.refused !== undefined) {
      const { key } = await waitingOn(handle);
      if (setup.added) await handle.signal('attack.addCharge', setup.added);
      // The gateway shows the refused charge went through: resolve it with its receipt.
      const resolved = await runCli(
        ['resolve', key, '--result', JSON.stringify({ order: setup.refused, receipt: `r_${setup.refused}` }), '--schema', schema.name],
        { TEMPORAL_ADDRESS: inject('temporalAddress') },
      );
      expect(resolved.code).toBe(0);
    }
    return handle.result().then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
  });
  return { charged, ended: 'value' in ended ? Promise.resolve(ended.value) : Promise.reject(ended.error) };
}

describe('resumable() around charges whose order changed while it waited', () => {
  it.each([
    ['plain order ids', 'A', 'B', 'C'],
    // Two UUIDs looked "rebuilt alike" to an earlier build: C was answered with B's receipt.
    ['UUID order ids', randomUUID(), randomUUID(), randomUUID()],
  ])('workflow scope, %s: the charge that took the refused one\'s place is refused by name, never answered with its receipt', async (_, a, b, c) => {
    const { charged, ended } = await chargeInPriorityOrder({
      charges: [{ order: a, priority: 1 }, { order: b, priority: 3 }],
      refused: b,
      added: { order: c, priority: 2 },
    });
    const failure = await activityFailureOf(ended);
    expect(failure.type).toBe('IdempotencyKeyReuse');
    expect((failure.details?.[0] as RefusalDetails).reason).toBe('resumed-arguments-changed');
    expect(failure.message).toContain('keyArgs');
    // A once, B once (resolved by the operator); C never charged, so never charged twice either.
    expect(charged.sort()).toEqual([a, b].sort());
  });

  it('workflow scope, unchanged order: each charge is answered from its own record, the refused one from the resolved one', async () => {
    const { charged, ended } = await chargeInPriorityOrder({ charges: [{ order: 'A', priority: 1 }, { order: 'B', priority: 2 }], refused: 'B' });
    expect(await ended).toEqual([
      { order: 'A', receipt: 'r_A' },
      { order: 'B', receipt: 'r_B' },
    ]);
    expect(charged.sort()).toEqual(['A', 'B']);
  });

  it.each([
    ['two charges', [{ order: 'A', priority: 1 }, { order: 'B', priority: 2 }]],
    ['two identical charges', [{ order: 'B', priority: 1 }, { order: 'B', priority: 2 }]],
  ])('call scope, %s in one resumable(): the second is refused before it runs, on the first pass', async (_, charges) => {
    const { charged, ended } = await chargeInPriorityOrder({ charges, settings: { charge: { scope: 'call' } } });
    const failure = await activityFailureOf(ended);
    expect(failure.type).toBe('IdempotencyConfiguration');
    expect(failure.message).toContain('own resumable()');
    // An earlier build charged the first again on the pass after a decision, or swallowed the second.
    expect(charged).toEqual([charges[0]!.order]);
  });

  it('call scope, a charge added ahead of the refused one while it waited: refused by name, and the refused one never charged again', async () => {
    const { charged, ended } = await chargeInPriorityOrder({
      charges: [{ order: 'B', priority: 2 }],
      refused: 'B',
      added: { order: 'C', priority: 1 },
      settings: { charge: { scope: 'call' } },
    });
    const failure = await activityFailureOf(ended);
    expect(failure.type).toBe('IdempotencyKeyReuse');
    expect((failure.details?.[0] as RefusalDetails).reason).toBe('resumed-arguments-changed');
    // C took B's place: keyed as its own it would be made, and B after it, under a new key, charged again.
    expect(charged).toEqual(['B']);
  });
});
