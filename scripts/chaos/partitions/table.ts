/** The partition table: one row per kind, summed over its runs; and what fails the campaign. */
import type { JudgedPartition } from './campaign.js';
import { problemsIn, runCounts, sum, textTable } from '../crash-points/table.js';
import type { RunCounts } from '../crash-points/table.js';

export interface PartitionRow extends RunCounts {
  readonly kind: string;
  /** The partitioned worker's claims another worker took over while it was cut off. */
  readonly takenOver: number;
  /** Of those, the ones whose late write was refused by its token and logged. */
  readonly lateRefused: number;
  /** Of those, the ones whose settling write never ended (refused only as a lease renewal). */
  readonly lateHung: number;
}

export function partitionRows(runs: readonly JudgedPartition[], kindOrder: readonly string[]): PartitionRow[] {
  return kindOrder
    .map((kind) => runs.filter((run) => run.facts.point === kind))
    .filter((kindRuns) => kindRuns.length > 0)
    .map((kindRuns) => ({
      kind: kindRuns[0]!.facts.point,
      ...runCounts(kindRuns),
      takenOver: sum(kindRuns, (run) => run.verdict.takenOver),
      lateRefused: sum(kindRuns, (run) => run.verdict.lateRefused),
      lateHung: sum(kindRuns, (run) => run.verdict.lateHung),
    }));
}

const HEADINGS = [
  'partition',
  'runs',
  'reached',
  'double calls',
  'lost actions',
  'refusals for a person',
  'reconciled',
  'workflows left open',
  'claims taken over',
  'late writes refused',
  'settling writes hung',
];

export function formatPartitionTable(rows: readonly PartitionRow[]): string {
  const cells = [
    HEADINGS,
    ...rows.map((row) =>
      [row.kind, row.runs, row.reached, row.doubleCalls, row.lostActions, row.refusals, row.reconciled, row.open, row.takenOver, row.lateRefused, row.lateHung].map(
        String,
      ),
    ),
    ['target', '', 'all', '0', '0', '-', '-', '0', '-', 'all (Postgres)', '0'],
  ];
  return textTable(cells);
}

/**
 * Why the campaign fails: a double call, a lost action, a workflow left open, a worker that died alone,
 * a partition that never overlapped a call in flight, and a claim taken over whose partitioned owner's
 * late write was taken (obeyed over the new holder), never ended (hung), or never heard of (not refused and logged).
 */
export function partitionProblems(runs: readonly JudgedPartition[]): string[] {
  return runs.flatMap((judged) => {
    const { facts, verdict } = judged;
    const run = `${facts.point} (run seed ${facts.seed})`;
    return [
      ...problemsIn([judged], 'the partition was not reached (no call in flight when it began, or it ended before the lease or the retry)'),
      ...(verdict.lateObeyed > 0 ? [`${run}: ${verdict.lateObeyed} late write(s) of the partitioned worker taken over the new holder's claim`] : []),
      ...(verdict.lateHung > 0 ? [`${run}: ${verdict.lateHung} settling write(s) of the partitioned worker never ended`] : []),
      ...(verdict.lateUnheard > 0 ? [`${run}: ${verdict.lateUnheard} claim(s) taken over without the partitioned worker's late write refused and logged`] : []),
    ];
  });
}
