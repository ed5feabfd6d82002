/**
 * The crash-point oracle counts what a customer would notice: an order charged twice under any keys,
 * a key sent again after the vendor took it, a workflow told "done" with anything but the vendor's
 * one charge of each order, and a workflow neither completed nor refused by name. No services.
 */
import { describe, expect, it } from 'vitest';
import { judge } from '../../scripts/chaos/crash-points/oracle.js';
import type { RunFacts } from '../../scripts/chaos/crash-points/run-facts.js';

const clean: RunFacts = {
  point: 'vendor acted, not answered',
  seed: 1,
  reconcile: true,
  reached: true,
  orderIds: ['o-0', 'o-1'],
  outcome: { kind: 'completed', receipts: [{ id: 'act_1', status: 'done' }, { id: 'act_2', status: 'done' }] },
  actions: [
    { orderId: 'o-0', id: 'act_1', key: 'k0' },
    { orderId: 'o-1', id: 'act_2', key: 'k1' },
  ],
  keysSentAgain: [],
  refusals: 0,
  reconciliations: ['happened', 'unknown'],
  workersDiedAlone: 0,
  notes: [],
  seconds: 7,
};

describe('the crash-point oracle', () => {
  it('passes a run in which each order was charged once and the workflow holds those charges', () => {
    expect(judge(clean)).toEqual({ doubleCalls: 0, lostActions: 0, refusals: 0, reconciled: 1, open: 0 });
  });

  it('counts an order charged twice under two keys', () => {
    const actions = [...clean.actions, { orderId: 'o-0', id: 'act_3', key: 'another key' }];
    expect(judge({ ...clean, actions }).doubleCalls).toBe(1);
  });

  it('counts a key sent again after the vendor took it, though its dedup charged once', () => {
    expect(judge({ ...clean, keysSentAgain: ['k1'] }).doubleCalls).toBe(1);
  });

  it('counts a workflow told "done" with a receipt that is not the vendor\'s charge, or for an order never charged', () => {
    const wrongReceipt = { kind: 'completed', receipts: [{ id: 'act_1', status: 'done' }, { id: 'act_9', status: 'done' }] } as const;
    expect(judge({ ...clean, outcome: wrongReceipt }).lostActions).toBe(1);
    expect(judge({ ...clean, actions: clean.actions.slice(0, 1) }).lostActions).toBe(1);
  });

  it('does not count a refused workflow whose charge was made: a person checks it', () => {
    const refused = judge({ ...clean, outcome: { kind: 'refused', type: 'IdempotencyOrphanedClaim' }, refusals: 1 });
    expect(refused).toMatchObject({ lostActions: 0, refusals: 1, open: 0 });
  });

  it('counts a workflow left open, or failed other than by a named refusal', () => {
    expect(judge({ ...clean, outcome: { kind: 'open' } }).open).toBe(1);
    expect(judge({ ...clean, outcome: { kind: 'failed', type: 'ActivityFailure' } }).open).toBe(1);
  });
});
