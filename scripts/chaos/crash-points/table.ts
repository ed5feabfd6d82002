/** The crash-point table: one row per point, summed over its runs; and what fails the campaign. */
import type { JudgedRun } from './campaign.js';
import type { RunVerdict } from './oracle.js';

/** What every campaign's row counts over its runs. */
export interface RunCounts {
  readonly runs: number;
  /** Runs that reached what they set out to (a kill where the point says, a partition over calls in flight). */
  readonly reached: number;
  readonly doubleCalls: number;
  readonly lostActions: number;
  readonly refusals: number;
  readonly reconciled: number;
  readonly open: number;
}

export interface PointRow extends RunCounts {
  readonly point: string;
}

export function runCounts(runs: readonly { readonly facts: { readonly reached: boolean }; readonly verdict: RunVerdict }[]): RunCounts {
  return {
    runs: runs.length,
    reached: runs.filter((run) => run.facts.reached).length,
    doubleCalls: sum(runs, (run) => run.verdict.doubleCalls),
    lostActions: sum(runs, (run) => run.verdict.lostActions),
    refusals: sum(runs, (run) => run.verdict.refusals),
    reconciled: sum(runs, (run) => run.verdict.reconciled),
    open: sum(runs, (run) => run.verdict.open),
  };
}

export function pointRows(runs: readonly JudgedRun[], pointOrder: readonly string[]): PointRow[] {
  return pointOrder
    .map((point) => runs.filter((run) => run.facts.point === point))
    .filter((pointRuns) => pointRuns.length > 0)
    .map((pointRuns) => ({ point: pointRuns[0]!.facts.point, ...runCounts(pointRuns) }));
}

const HEADINGS = ['crash point', 'runs', 'reached', 'double calls', 'lost actions', 'refusals for a person', 'reconciled', 'workflows left open'];

export function formatTable(rows: readonly PointRow[]): string {
  const cells = [
    HEADINGS,
    ...rows.map((row) => [row.point, row.runs, row.reached, row.doubleCalls, row.lostActions, row.refusals, row.reconciled, row.open].map(String)),
    ['target', '', 'all', '0', '0', '-', '-', '0'],
  ];
  return textTable(cells);
}

/** Cells as aligned columns, the first line the headings, underlined. */
export function textTable(cells: readonly (readonly string[])[]): string {
  const widths = cells[0]!.map((_, column) => Math.max(...cells.map((line) => line[column]!.length)));
  const line = (values: readonly string[]) => values.map((value, column) => value.padEnd(widths[column]!)).join('  ').trimEnd();
  return [line(cells[0]!), line(widths.map((width) => '-'.repeat(width))), ...cells.slice(1).map(line)].join('\n');
}

/**
 * Why the campaign fails: a double call, a lost action, a workflow left open, a point not reached, a
 * worker that died alone. `notReached` says what a run that did not reach its point missed.
 */
export function problemsIn(runs: readonly JudgedRun[], notReached = 'the crash point was not reached'): string[] {
  return runs.flatMap(({ facts, verdict }) => {
    const run = `${facts.point} (run seed ${facts.seed})`;
    return [
      ...(verdict.doubleCalls > 0 ? [`${run}: ${verdict.doubleCalls} order(s) called twice: ${JSON.stringify(facts.actions)}, keys sent again ${JSON.stringify(facts.keysSentAgain)}`] : []),
      ...(verdict.lostActions > 0 ? [`${run}: ${verdict.lostActions} lost action(s): told ${JSON.stringify(facts.outcome)}, the vendor made ${JSON.stringify(facts.actions)}`] : []),
      ...(verdict.open > 0 ? [`${run}: the workflow was left ${facts.outcome.kind === 'failed' ? `failed with ${facts.outcome.type}` : 'open'}`] : []),
      ...(facts.reached ? [] : [`${run}: ${notReached}`]),
      ...(facts.workersDiedAlone > 0 ? [`${run}: ${facts.workersDiedAlone} worker process(es) exited without being killed`] : []),
    ];
  });
}

export function sum<Run>(runs: readonly Run[], of: (run: Run) => number): number {
  return runs.reduce((total, run) => total + of(run), 0);
}
