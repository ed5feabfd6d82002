/** The partition table: one row per kind, summed over its runs; and what fails the campaign. */
import type { JudgedPartition } from './campaign.js';

export interface PartitionRow {
  readonly kind: string;
  readonly runs: number;
  /** Runs whose partition overlapped calls in flight and outlasted the lease, as the kind says. */
  readonly reached: number;
  readonly doubleCalls: number;
  readonly lostActions: number;
  readonly refusals: number;
  readonly reconciled: number;
  readonly open: number;
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
      runs: kindRuns.length,
      reached: kindRuns.filter((run) => run.facts.reached).length,
      doubleCalls: sum(kindRuns, (run) => run.verdict.doubleCalls),
      lostActions: sum(kindRuns, (run) => run.verdict.lostActions),
      refusals: sum(kindRuns, (run) => run.verdict.refusals),
      reconciled: sum(kindRuns, (run) => run.verdict.reconciled),
      open: sum(kindRuns, (run) => run.verdict.open),
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
  const widths = HEADINGS.map((_, column) => Math.max(...cells.map((line) => line[column]!.length)));
  const line = (values: readonly string[]) => values.map((value, column) => value.padEnd(widths[column]!)).join('  ').trimEnd();
  return [line(cells[0]!), line(widths.map((width) => '-'.repeat(width))), ...cells.slice(1).map(line)].join('\n');
}

/**
 * Why the campaign fails: a double call, a lost action, a workflow left open, a worker that died alone,
 * a partition that never overlapped a call in flight, and a claim taken over whose partitioned owner's
 * late write was taken (obeyed over the new holder), never ended (hung), or never heard of (not refused and logged).
 */
export function partitionProblems(runs: readonly JudgedPartition[]): string[] {
  return runs.flatMap(({ facts, verdict }) => {
    const run = `${facts.point} (run seed ${facts.seed})`;
    return [
      ...(verdict.doubleCalls > 0 ? [`${run}: ${verdict.doubleCalls} order(s) called twice: ${JSON.stringify(facts.actions)}, keys sent again ${JSON.stringify(facts.keysSentAgain)}`] : []),
      ...(verdict.lostActions > 0 ? [`${run}: ${verdict.lostActions} lost action(s): told ${JSON.stringify(facts.outcome)}, the vendor made ${JSON.stringify(facts.actions)}`] : []),
      ...(verdict.open > 0 ? [`${run}: the workflow was left ${facts.outcome.kind === 'failed' ? `failed with ${facts.outcome.type}` : 'open'}`] : []),
      ...(facts.reached ? [] : [`${run}: the partition was not reached (no call in flight when it began, or it ended before the lease or the retry)`]),
      ...(facts.workersDiedAlone > 0 ? [`${run}: ${facts.workersDiedAlone} worker process(es) exited without being killed`] : []),
      ...(verdict.lateObeyed > 0 ? [`${run}: ${verdict.lateObeyed} late write(s) of the partitioned worker taken over the new holder's claim`] : []),
      ...(verdict.lateHung > 0 ? [`${run}: ${verdict.lateHung} settling write(s) of the partitioned worker never ended`] : []),
      ...(verdict.lateUnheard > 0 ? [`${run}: ${verdict.lateUnheard} claim(s) taken over without the partitioned worker's late write refused and logged`] : []),
    ];
  });
}

function sum(runs: readonly JudgedPartition[], of: (run: JudgedPartition) => number): number {
  return runs.reduce((total, run) => total + of(run), 0);
}
