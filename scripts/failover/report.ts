/** What a failover run found, whether it kept the promise, and the table that compares runs. */
import { ACCEPTED_OUTCOMES } from '../chaos/report.js';
import type { Replication } from './cluster.js';

export interface FailoverReport {
  readonly replication: Replication;
  readonly seed: number;
  readonly linkDelayMs: number;
  readonly workflows: number;
  readonly activities: number;
  readonly workers: number;
  readonly seconds: number;
  /** Actions the vendor had performed when the primary was killed. */
  readonly actionsBeforeKill: number;
  readonly promotedAfterMs: number;
  readonly followedAfterMs: number;
  /** Claims the dead primary held when it died (read from its data afterwards), and how many had no outcome yet. */
  readonly claimsOnDeadPrimary: number;
  readonly openOnDeadPrimary: number;
  /** Keys the dead primary had claimed that the promoted standby did not have. */
  readonly claimsLost: readonly string[];
  /** Of those, keys whose call had reached the vendor before the standby took writes: claims a worker was told it held. */
  readonly claimsLostAfterCall: readonly string[];
  /** Keys completed on the dead primary that the promoted standby had still without an outcome. */
  readonly recordsLost: readonly string[];
  /** Keys that reached the vendor again after it had taken them: each a call made twice (no activity here is vendorDedup). */
  readonly callsTwice: readonly { key: string; requests: number }[];
  /** Keys the vendor acted on twice, and requests acted on twice whatever their keys. */
  readonly keysActedTwice: number;
  readonly actionsRepeated: number;
  /** Receipts a completed workflow holds for actions the vendor never performed. */
  readonly lostActions: readonly { workflowId: string; receipt: string }[];
  /** How every workflow ended: `completed`, the failure type it failed with, or `did not end`. */
  readonly outcomes: Readonly<Record<string, number>>;
  /** The workflows that did not complete, by failure type and the refusal's case. */
  readonly refusals: Readonly<Record<string, number>>;
  /** Claims still without an outcome when every workflow had ended. */
  readonly openClaimsAtEnd: readonly { key: string; state: string; attempt: number; note: string | null; called: boolean }[];
  /** No worker is killed in this run: every exit before the end is one. */
  readonly unexpectedExits: readonly { pid: number; code: number | null; signal: string | null; lastOutput: string }[];
}

export const DID_NOT_END = 'did not end';

/** The oracle: what a run with a synchronous standby must show. An asynchronous one shows what the trap costs. */
export function problemsIn(report: FailoverReport): string[] {
  const problems: string[] = [];
  for (const key of report.claimsLostAfterCall) problems.push(`claim ${key} was lost at failover after its call went out`);
  for (const { key, requests } of report.callsTwice) problems.push(`key ${key} reached the vendor ${requests} times`);
  if (report.keysActedTwice > 0) problems.push(`${report.keysActedTwice} key(s) acted on more than once by the vendor`);
  if (report.actionsRepeated > 0) problems.push(`${report.actionsRepeated} request(s) acted on more than once, whatever their keys`);
  for (const { workflowId, receipt } of report.lostActions) problems.push(`workflow ${workflowId} holds receipt ${receipt}, which is not the vendor's action on what it asked for`);
  for (const [outcome, count] of Object.entries(report.outcomes)) {
    if (!ACCEPTED_OUTCOMES.has(outcome)) problems.push(`${count} workflow(s) ended with ${outcome}, not completion or a named refusal`);
  }
  for (const exit of report.unexpectedExits) {
    problems.push(`worker ${exit.pid} exited on its own (code ${exit.code}, signal ${exit.signal}):\n${exit.lastOutput}`);
  }
  return problems;
}

const ROWS: ReadonlyArray<readonly [string, (report: FailoverReport) => string | number]> = [
  ['activities (workflows × calls), workers', (r) => `${r.activities} (${r.workflows} × ${r.activities / r.workflows}), ${r.workers}`],
  ['replication link, one way', (r) => `${r.linkDelayMs} ms`],
  ['vendor actions before the kill', (r) => r.actionsBeforeKill],
  ['claims on the primary when killed (open)', (r) => `${r.claimsOnDeadPrimary} (${r.openOnDeadPrimary})`],
  ['standby promoted / proxy followed after', (r) => `${r.promotedAfterMs} / ${r.followedAfterMs} ms`],
  ['claims on the dead primary, absent after promotion', (r) => r.claimsLost.length],
  ['  of which a worker had acted on (its call went out)', (r) => r.claimsLostAfterCall.length],
  ['records on the dead primary, absent after promotion', (r) => r.recordsLost.length],
  ['calls run twice (key sent again)', (r) => r.callsTwice.length],
  ['actions performed twice by the vendor', (r) => r.keysActedTwice + r.actionsRepeated],
  ['lost actions', (r) => r.lostActions.length],
  ['workflows completed', (r) => r.outcomes['completed'] ?? 0],
  ['workflows refused by name', (r) => namedRefusals(r)],
  ['  why', (r) => Object.entries(r.refusals).map(([why, count]) => `${count} ${why}`).join(', ') || '-'],
  ['workflows ended otherwise or not at all', (r) => r.workflows - (r.outcomes['completed'] ?? 0) - namedRefusals(r)],
  ['claims without an outcome at the end', (r) => r.openClaimsAtEnd.length],
  ['  of which records lost at failover', (r) => r.openClaimsAtEnd.filter(({ key }) => r.recordsLost.includes(key)).length],
  ['  of which the vendor never got the call', (r) => r.openClaimsAtEnd.filter(({ called }) => !called).length],
  ['worker processes that exited on their own', (r) => r.unexpectedExits.length],
  ['oracle (0 double calls, 0 lost, all named)', (r) => (problemsIn(r).length === 0 ? 'holds' : 'broken')],
  ['seconds', (r) => r.seconds.toFixed(0)],
];

function namedRefusals(report: FailoverReport): number {
  return Object.entries(report.outcomes)
    .filter(([outcome]) => outcome !== 'completed' && ACCEPTED_OUTCOMES.has(outcome))
    .reduce((sum, [, count]) => sum + count, 0);
}

/** One column per run, one row per figure, as a Markdown table (it goes into docs/measurements.md as printed). */
export function printTable(reports: readonly FailoverReport[], log: (line: string) => void): void {
  const header = ['', ...reports.map((r) => `${r.replication === 'sync' ? 'synchronous' : 'asynchronous'} standby (seed ${r.seed})`)];
  const rows = ROWS.map(([label, value]) => [label, ...reports.map((r) => String(value(r)))]);
  const widths = header.map((_, column) => Math.max(...[header, ...rows].map((row) => row[column]!.length)));
  const line = (cells: readonly string[]) => `| ${cells.map((cell, column) => cell.padEnd(widths[column]!)).join(' | ')} |`;
  log(line(header));
  log(`|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`);
  for (const row of rows) log(line(row));
}
