/** The crash-point table: one row per point, summed over its runs; and what fails the campaign. */
import type { JudgedRun } from './campaign.js';

export interface PointRow {
  readonly point: string;
  readonly runs: number;
  /** Runs whose kills landed where the point says. */
  readonly reached: number;
  readonly doubleCalls: number;
  readonly lostActions: number;
  readonly refusals: number;
  readonly reconciled: number;
  readonly open: number;
}

export function pointRows(runs: readonly JudgedRun[], pointOrder: readonly string[]): PointRow[] {
  return pointOrder
    .map((point) => runs.filter((run) => run.facts.point === point))
    .filter((pointRuns) => pointRuns.length > 0)
    .map((pointRuns) => ({
      point: pointRuns[0]!.facts.point,
      runs: pointRuns.length,
      reached: pointRuns.filter((run) => run.facts.reached).length,
      doubleCalls: sum(pointRuns, (run) => run.verdict.doubleCalls),
      lostActions: sum(pointRuns, (run) => run.verdict.lostActions),
      refusals: sum(pointRuns, (run) => run.verdict.refusals),
      reconciled: sum(pointRuns, (run) => run.verdict.reconciled),
      open: sum(pointRuns, (run) => run.verdict.open),
    }));
}

const HEADINGS = ['crash point', 'runs', 'reached', 'double calls', 'lost actions', 'refusals for a person', 'reconciled', 'workflows left open'];

export function formatTable(rows: readonly PointRow[]): string {
  const cells = [
    HEADINGS,
    ...rows.map((row) => [row.point, row.runs, row.reached, row.doubleCalls, row.lostActions, row.refusals, row.reconciled, row.open].map(String)),
    ['target', '', 'all', '0', '0', '-', '-', '0'],
  ];
  const widths = HEADINGS.map((_, column) => Math.max(...cells.map((line) => line[column]!.length)));
  const line = (values: readonly string[]) => values.map((value, column) => value.padEnd(widths[column]!)).join('  ').trimEnd();
  return [line(cells[0]!), line(widths.map((width) => '-'.repeat(width))), ...cells.slice(1).map(line)].join('\n');
}

/** Why the campaign fails: a double call, a lost action, a workflow left open, a point not reached, a worker that died alone. */
export function problemsIn(runs: readonly JudgedRun[]): string[] {
  return runs.flatMap(({ facts, verdict }) => {
    const run = `${facts.point} (run seed ${facts.seed})`;
    return [
      ...(verdict.doubleCalls > 0 ? [`${run}: ${verdict.doubleCalls} order(s) called twice: ${JSON.stringify(facts.actions)}, keys sent again ${JSON.stringify(facts.keysSentAgain)}`] : []),
      ...(verdict.lostActions > 0 ? [`${run}: ${verdict.lostActions} lost action(s): told ${JSON.stringify(facts.outcome)}, the vendor made ${JSON.stringify(facts.actions)}`] : []),
      ...(verdict.open > 0 ? [`${run}: the workflow was left ${facts.outcome.kind === 'failed' ? `failed with ${facts.outcome.type}` : 'open'}`] : []),
      ...(facts.reached ? [] : [`${run}: the crash point was not reached`]),
      ...(facts.workersDiedAlone > 0 ? [`${run}: ${facts.workersDiedAlone} worker process(es) exited without being killed`] : []),
    ];
  });
}

function sum(runs: readonly JudgedRun[], of: (run: JudgedRun) => number): number {
  return runs.reduce((total, run) => total + of(run), 0);
}
