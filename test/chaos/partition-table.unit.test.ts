/**
 * The partition table sums each kind's runs, and the campaign fails on what must never happen (a double
 * call, a lost action, a workflow left open, a late write taken over the new holder's claim) and on a
 * run that proves nothing (its partition never overlapped a call in flight, or a claim was taken over
 * and the partitioned worker's late write on it was never refused and logged). No services.
 */
import { describe, expect, it } from 'vitest';
import type { JudgedPartition } from '../../scripts/chaos/partitions/campaign.js';
import { judgePartition } from '../../scripts/chaos/partitions/oracle.js';
import type { PartitionFacts } from '../../scripts/chaos/partitions/oracle.js';
import { formatPartitionTable, partitionProblems, partitionRows } from '../../scripts/chaos/partitions/table.js';

const facts: PartitionFacts = {
  point: 'Postgres cut',
  seed: 11,
  reconcile: true,
  reached: true,
  cutOffFrom: 'postgres',
  orderIds: ['o-0'],
  outcome: { kind: 'completed', receipts: [{ id: 'act_1', status: 'done' }] },
  actions: [{ orderId: 'o-0', id: 'act_1', key: 'k0' }],
  keysSentAgain: [],
  refusals: 0,
  reconciliations: ['happened'],
  workersDiedAlone: 0,
  notes: [],
  seconds: 9,
  heldKeys: ['k0'],
  takenOver: ['k0'],
  lateWritesRefused: ['k0'],
  lateWritesTaken: [],
  leasesLost: [],
};
const judged = (changes: Partial<PartitionFacts> = {}): JudgedPartition => ({ facts: { ...facts, ...changes }, verdict: judgePartition({ ...facts, ...changes }) });

describe('the partition oracle', () => {
  it('counts a late write on a claim taken over as refused, taken, or never heard of', () => {
    const three = { heldKeys: ['k0', 'k1', 'k2'], takenOver: ['k0', 'k1', 'k2'] };
    expect(judgePartition({ ...facts, ...three, lateWritesRefused: ['k0', 'k1'], lateWritesTaken: ['k1'] })).toMatchObject({
      takenOver: 3,
      lateRefused: 1,
      lateObeyed: 1,
      lateUnheard: 1,
    });
  });

  it('counts a claim whose settling write hung, its lease renewal refused and logged, as refused and hung, not unheard', () => {
    expect(judgePartition({ ...facts, lateWritesRefused: [], leasesLost: ['k0'] })).toMatchObject({ lateRefused: 1, lateHung: 1, lateUnheard: 0 });
    expect(judgePartition({ ...facts, leasesLost: ['k0'] })).toMatchObject({ lateRefused: 1, lateHung: 0, lateUnheard: 0 });
  });

  it('expects no late write from a worker cut off from Temporal: it wrote on time, and gave up what was taken over', () => {
    expect(judgePartition({ ...facts, cutOffFrom: 'temporal', lateWritesRefused: [] })).toMatchObject({ takenOver: 1, lateRefused: 0, lateUnheard: 0 });
    expect(judgePartition({ ...facts, cutOffFrom: 'temporal', lateWritesTaken: ['k0'] })).toMatchObject({ lateObeyed: 1 });
  });

  it('ignores what the worker said of keys that were not taken over (its own record, on a claim it still held)', () => {
    expect(judgePartition({ ...facts, takenOver: [], lateWritesRefused: ['k0'], lateWritesTaken: ['k0'] })).toMatchObject({
      takenOver: 0,
      lateRefused: 0,
      lateObeyed: 0,
      lateUnheard: 0,
    });
  });
});

describe('the partition table', () => {
  it('sums each kind over its runs, in the order asked', () => {
    const temporalCut = judged({ point: 'Temporal cut', cutOffFrom: 'temporal', takenOver: [], lateWritesRefused: [], reconciliations: [] });
    const rows = partitionRows([judged(), judged({ reached: false }), temporalCut], ['Temporal cut', 'Postgres cut']);
    expect(rows).toEqual([
      { kind: 'Temporal cut', runs: 1, reached: 1, doubleCalls: 0, lostActions: 0, refusals: 0, reconciled: 0, open: 0, takenOver: 0, lateRefused: 0, lateHung: 0 },
      { kind: 'Postgres cut', runs: 2, reached: 1, doubleCalls: 0, lostActions: 0, refusals: 0, reconciled: 2, open: 0, takenOver: 2, lateRefused: 2, lateHung: 0 },
    ]);
    const lines = formatPartitionTable(rows).split('\n');
    expect(lines[0]).toMatch(/^partition\s+runs\s+reached\s+double calls\s+lost actions\s+refusals for a person\s+reconciled\s+workflows left open\s+claims taken over\s+late writes refused\s+settling writes hung$/);
    expect(lines.at(-1)).toMatch(/^target\s+all\s+0\s+0\s+-\s+-\s+0\s+-\s+all \(Postgres\)\s+0$/);
  });

  it('passes a run whose late write was refused, and fails one whose partition was not reached or whose worker died', () => {
    expect(partitionProblems([judged()])).toEqual([]);
    expect(partitionProblems([judged({ reached: false }), judged({ workersDiedAlone: 1 })])).toEqual([
      'Postgres cut (run seed 11): the partition was not reached (no call in flight when it began, or it ended before the lease or the retry)',
      'Postgres cut (run seed 11): 1 worker process(es) exited without being killed',
    ]);
  });

  it('fails a late write taken over the new holder, and a claim taken over whose late write was never heard of', () => {
    expect(partitionProblems([judged({ lateWritesTaken: ['k0'] }), judged({ lateWritesRefused: [] })])).toEqual([
      "Postgres cut (run seed 11): 1 late write(s) of the partitioned worker taken over the new holder's claim",
      "Postgres cut (run seed 11): 1 claim(s) taken over without the partitioned worker's late write refused and logged",
    ]);
  });

  it('fails a settling write that never ended (a statement a lossy partition left unanswered)', () => {
    expect(partitionProblems([judged({ lateWritesRefused: [], leasesLost: ['k0'] })])).toEqual([
      'Postgres cut (run seed 11): 1 settling write(s) of the partitioned worker never ended',
    ]);
  });

  it('fails a double call, a lost action and a workflow left open, naming the run seed', () => {
    const doubled = judged({ actions: [{ orderId: 'o-0', id: 'act_1', key: 'k0' }, { orderId: 'o-0', id: 'act_2', key: 'k9' }] });
    const lost = judged({ outcome: { kind: 'completed', receipts: [{ id: 'act_9', status: 'done' }] } });
    const open = judged({ outcome: { kind: 'open' } });
    const problems = partitionProblems([doubled, lost, open]);
    expect(problems).toHaveLength(3);
    expect(problems[0]).toMatch(/^Postgres cut \(run seed 11\): 1 order\(s\) called twice/);
    expect(problems[1]).toMatch(/^Postgres cut \(run seed 11\): 1 lost action\(s\)/);
    expect(problems[2]).toBe('Postgres cut (run seed 11): the workflow was left open');
  });
});
