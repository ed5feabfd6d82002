/**
 * `npm run chaos -- --partitions`: every partition kind, a seeded number of runs each, a few runs at
 * a time, on one Temporal server and one Postgres schema; a table per kind.
 */
import type { PartitionKind } from './kinds.js';
import { judgePartition } from './oracle.js';
import type { PartitionFacts, PartitionVerdict } from './oracle.js';
import { runPartition } from './partition-run.js';
import { outcomeText, runSeededCampaign } from '../seeded-campaign.js';
import type { Judged, SeededCampaignOptions } from '../seeded-campaign.js';

export interface PartitionCampaignOptions extends SeededCampaignOptions {
  readonly kinds: readonly PartitionKind[];
  readonly runsPerKind: number;
}

export type JudgedPartition = Judged<PartitionFacts, PartitionVerdict>;

export function runPartitionCampaign(options: PartitionCampaignOptions): Promise<JudgedPartition[]> {
  return runSeededCampaign(options, {
    prefix: 'partition',
    cases: options.kinds,
    runsPerCase: options.runsPerKind,
    run: runPartition,
    judge: judgePartition,
    line: runLine,
  });
}

function runLine(facts: PartitionFacts, verdict: PartitionVerdict): string {
  const outcome = outcomeText(facts);
  return (
    `  ${facts.point} (run seed ${facts.seed}, ${facts.notes.join(', ')}): ${facts.reached ? '' : 'NOT REACHED, '}${outcome}; ` +
    `${facts.actions.length} charge(s) for ${facts.orderIds.length} order(s), double ${verdict.doubleCalls}, lost ${verdict.lostActions}, ` +
    `refusals ${verdict.refusals}, reconciled ${verdict.reconciled}, taken over ${verdict.takenOver}, late writes refused ${verdict.lateRefused}` +
    `${verdict.lateHung ? ` (${verdict.lateHung} settling write(s) hung)` : ''}${verdict.lateObeyed ? `, OBEYED ${verdict.lateObeyed}` : ''}; ${facts.seconds.toFixed(1)} s`
  );
}
