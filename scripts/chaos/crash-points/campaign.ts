/**
 * `npm run chaos -- --crash-points`: every crash point, a seeded number of runs each, a few runs at
 * a time, on one Temporal server and one Postgres schema; a table per point.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Client } from '@temporalio/client';
import { migrate } from '../../../src/index.js';
import type { CrashPoint } from './crash-point.js';
import { runCrashPoint } from './crash-run.js';
import { WorkflowWorker } from './workflow-worker.js';
import { judge } from './oracle.js';
import type { RunVerdict } from './oracle.js';
import type { RunFacts } from './run-facts.js';
import { runSeed } from '../../../dev/seeded-random.js';

export interface CampaignOptions {
  readonly client: Client;
  readonly temporalAddress: string;
  readonly databaseUrl: string;
  readonly workflowBundlePath: string;
  readonly points: readonly CrashPoint[];
  readonly seed: number;
  readonly runsPerPoint: number;
  /** Runs at once: each is mostly waiting on timeouts, but each worker start-up costs a core for a second or two. */
  readonly concurrency: number;
  readonly log: (line: string) => void;
}

export interface JudgedRun {
  readonly facts: RunFacts;
  readonly verdict: RunVerdict;
}

export async function runCampaign(options: CampaignOptions): Promise<JudgedRun[]> {
  const pool = new pg.Pool({ connectionString: options.databaseUrl, max: 4 });
  pool.on('error', () => undefined);
  const schema = `crash_${randomUUID().slice(0, 8)}`;
  const workflowTaskQueue = `crash-workflows-${randomUUID().slice(0, 8)}`;
  const services = { ...options, pool, schema, workflowTaskQueue };
  const workflows = await WorkflowWorker.start(options.temporalAddress, options.workflowBundlePath, workflowTaskQueue);
  try {
    await migrate(pool, { schema });
    const queue = options.points.flatMap((point) => Array.from({ length: options.runsPerPoint }, (_, run) => ({ point, run })));
    const judged: JudgedRun[] = [];
    const next = async (): Promise<void> => {
      for (let item = queue.shift(); item; item = queue.shift()) {
        const facts = await runCrashPoint(item.point, runSeed(options.seed, item.point.name, item.run), services);
        const verdict = judge(facts);
        options.log(runLine(facts, verdict));
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

function runLine(facts: RunFacts, verdict: RunVerdict): string {
  const outcome = facts.outcome.kind === 'completed' || facts.outcome.kind === 'open' ? facts.outcome.kind : `${facts.outcome.kind} ${facts.outcome.type}`;
  return (
    `  ${facts.point} (run seed ${facts.seed}, reconcile ${facts.reconcile ? 'on' : 'off'}${facts.notes.length ? `, ${facts.notes.join(', ')}` : ''}): ` +
    `${facts.reached ? '' : 'NOT REACHED, '}${outcome}; ${facts.actions.length} charge(s) for ${facts.orderIds.length} order(s), ` +
    `double ${verdict.doubleCalls}, lost ${verdict.lostActions}, refusals ${verdict.refusals}, reconciled ${verdict.reconciled}; ${facts.seconds.toFixed(1)} s`
  );
}
