/**
 * `npm run chaos -- --crash-points`: every crash point, a seeded number of runs each, a few runs at
 * a time, on one Temporal server and one Postgres schema; a table per point.
 */
import type { CrashPoint } from './crash-point.js';
import { runCrashPoint } from './crash-run.js';
import { judge } from './oracle.js';
import type { RunVerdict } from './oracle.js';
import type { RunFacts } from './run-facts.js';
import { outcomeText, runSeededCampaign } from '../seeded-campaign.js';
import type { Judged, SeededCampaignOptions } from '../seeded-campaign.js';

export interface CampaignOptions extends SeededCampaignOptions {
  readonly points: readonly CrashPoint[];
  readonly runsPerPoint: number;
}

export type JudgedRun = Judged<RunFacts, RunVerdict>;

export function runCampaign(options: CampaignOptions): Promise<JudgedRun[]> {
  return runSeededCampaign(options, { prefix: 'crash', cases: options.points, runsPerCase: options.runsPerPoint, run: runCrashPoint, judge, line: runLine });
}

function runLine(facts: RunFacts, verdict: RunVerdict): string {
  const outcome = outcomeText(facts);
  return (
    `  ${facts.point} (run seed ${facts.seed}, reconcile ${facts.reconcile ? 'on' : 'off'}${facts.notes.length ? `, ${facts.notes.join(', ')}` : ''}): ` +
    `${facts.reached ? '' : 'NOT REACHED, '}${outcome}; ${facts.actions.length} charge(s) for ${facts.orderIds.length} order(s), ` +
    `double ${verdict.doubleCalls}, lost ${verdict.lostActions}, refusals ${verdict.refusals}, reconciled ${verdict.reconciled}; ${facts.seconds.toFixed(1)} s`
  );
}
