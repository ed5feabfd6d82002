/**
 * The crash-point table sums each point's runs, and the campaign fails on what must never happen
 * (a double call, a lost action, a workflow left open) and on a run that proves nothing (its kill
 * never landed, or a worker died on its own). No services.
 */
import { describe, expect, it } from 'vitest';
import type { JudgedRun } from '../../scripts/chaos/crash-points/campaign.js';
import { judge } from '../../scripts/chaos/crash-points/oracle.js';
import type { RunFacts } from '../../scripts/chaos/crash-points/run-facts.js';
import { formatTable, pointRows, problemsIn } from '../../scripts/chaos/crash-points/table.js';

const facts: RunFacts = {
  point: 'claim committed',
  seed: 7,
  reconcile: false,
  reached: true,
  orderIds: ['o-0'],
  outcome: { kind: 'refused', type: 'IdempotencyOrphanedClaim' },
  actions: [],
  keysSentAgain: [],
  refusals: 1,
  reconciliations: [],
  workersDiedAlone: 0,
  notes: [],
  seconds: 5,
};
const judged = (changes: Partial<RunFacts> = {}): JudgedRun => ({ facts: { ...facts, ...changes }, verdict: judge({ ...facts, ...changes }) });

describe('the crash-point table', () => {
  it('sums each point over its runs, in the order asked', () => {
    const rows = pointRows([judged(), judged({ reached: false }), judged({ point: 'during reconcile', refusals: 0, reconciliations: ['happened'] })], ['during reconcile', 'claim committed']);
    expect(rows).toEqual([
      { point: 'during reconcile', runs: 1, reached: 1, doubleCalls: 0, lostActions: 0, refusals: 0, reconciled: 1, open: 0 },
      { point: 'claim committed', runs: 2, reached: 1, doubleCalls: 0, lostActions: 0, refusals: 2, reconciled: 0, open: 0 },
    ]);
    expect(formatTable(rows).split('\n').at(-1)).toMatch(/^target\s+all\s+0\s+0\s+-\s+-\s+0$/);
  });

  it('passes refusals, and fails a run whose kill never landed or whose worker died on its own', () => {
    expect(problemsIn([judged()])).toEqual([]);
    expect(problemsIn([judged({ reached: false }), judged({ workersDiedAlone: 1 })])).toEqual([
      'claim committed (run seed 7): the crash point was not reached',
      'claim committed (run seed 7): 1 worker process(es) exited without being killed',
    ]);
  });

  it('fails a double call, a lost action and a workflow left open, naming the run seed', () => {
    const doubled = judged({ actions: [{ orderId: 'o-0', id: 'a1', key: 'k' }, { orderId: 'o-0', id: 'a2', key: 'k2' }] });
    const lost = judged({ outcome: { kind: 'completed', receipts: [{ id: 'a9', status: 'done' }] } });
    const open = judged({ outcome: { kind: 'open' } });
    const problems = problemsIn([doubled, lost, open]);
    expect(problems).toHaveLength(3);
    expect(problems[0]).toMatch(/^claim committed \(run seed 7\): 1 order\(s\) called twice/);
    expect(problems[1]).toMatch(/^claim committed \(run seed 7\): 1 lost action\(s\)/);
    expect(problems[2]).toBe('claim committed (run seed 7): the workflow was left open');
  });
});
