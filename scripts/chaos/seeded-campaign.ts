/**
 * What the crash-point and partition campaigns share: one Postgres schema and one workflow worker for
 * all their runs, each case run a seeded number of times, a few runs at a time, each run judged and
 * logged as it ends.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Client } from '@temporalio/client';
import { migrate } from '../../src/index.js';
import { runSeed } from '../../dev/seeded-random.js';
import type { CrashRunServices } from './crash-points/crash-run.js';
import { WorkflowWorker } from './crash-points/workflow-worker.js';

export interface SeededCampaignOptions {
  readonly client: Client;
  readonly temporalAddress: string;
  readonly databaseUrl: string;
  readonly workflowBundlePath: string;
  readonly seed: number;
  /** Runs at once: each is mostly waiting on timeouts, but each worker start-up costs a core for a second or two. */
  readonly concurrency: number;
  readonly log: (line: string) => void;
}

export interface Judged<Facts, Verdict> {
  readonly facts: Facts;
  readonly verdict: Verdict;
}

export interface Campaign<Case extends { readonly name: string }, Facts, Verdict> {
  /** Names the campaign's schema and task queue. */
  readonly prefix: string;
  readonly cases: readonly Case[];
  readonly runsPerCase: number;
  run(item: Case, seed: number, services: CrashRunServices): Promise<Facts>;
  judge(facts: Facts): Verdict;
  line(facts: Facts, verdict: Verdict): string;
}

export async function runSeededCampaign<Case extends { readonly name: string }, Facts, Verdict>(
  options: SeededCampaignOptions,
  campaign: Campaign<Case, Facts, Verdict>,
): Promise<Judged<Facts, Verdict>[]> {
  const pool = new pg.Pool({ connectionString: options.databaseUrl, max: 4 });
  pool.on('error', () => undefined);
  const schema = `${campaign.prefix}_${randomUUID().slice(0, 8)}`;
  const workflowTaskQueue = `${campaign.prefix}-workflows-${randomUUID().slice(0, 8)}`;
  const services = { ...options, pool, schema, workflowTaskQueue };
  const workflows = await WorkflowWorker.start(options.temporalAddress, options.workflowBundlePath, workflowTaskQueue);
  try {
    await migrate(pool, { schema });
    const queue = campaign.cases.flatMap((item) => Array.from({ length: campaign.runsPerCase }, (_, run) => ({ item, run })));
    const judged: Judged<Facts, Verdict>[] = [];
    const next = async (): Promise<void> => {
      for (let entry = queue.shift(); entry; entry = queue.shift()) {
        const facts = await campaign.run(entry.item, runSeed(options.seed, entry.item.name, entry.run), services);
        const verdict = campaign.judge(facts);
        options.log(campaign.line(facts, verdict));
        judged.push({ facts, verdict });
      }
    };
    await Promise.all(Array.from({ length: options.concurrency }, next));
    return judged;
  } finally {
    await workflows.stop();
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await pool.end();
  }
}

/** How a run ended, for its log line. */
export function outcomeText(facts: { readonly outcome: { readonly kind: string; readonly type?: string } }): string {
  return facts.outcome.kind === 'completed' || facts.outcome.kind === 'open' ? facts.outcome.kind : `${facts.outcome.kind} ${facts.outcome.type}`;
}
