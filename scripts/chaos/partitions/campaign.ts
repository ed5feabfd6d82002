/**
 * `npm run chaos -- --partitions`: every partition kind, a seeded number of runs each, a few runs at
 * a time, on one Temporal server and one Postgres schema; a table per kind.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Client } from '@temporalio/client';
import { migrate } from '../../../src/index.js';
import { WorkflowWorker } from '../crash-points/workflow-worker.js';
import { runSeed } from '../../../dev/seeded-random.js';
import type { PartitionKind } from './kinds.js';
import { judgePartition } from './oracle.js';
import type { PartitionFacts, PartitionVerdict } from './oracle.js';
import { runPartition } from './partition-run.js';

export interface PartitionCampaignOptions {
  readonly client: Client;
  readonly temporalAddress: string;
  readonly databaseUrl: string;
  readonly workflowBundlePath: string;
  readonly kinds: readonly PartitionKind[];
  readonly seed: number;
  readonly runsPerKind: number;
  /** Runs at once: each starts two worker processes, a core for a second or two each. */
  readonly concurrency: number;
  readonly log: (line: string) => void;
}

export interface JudgedPartition {
  readonly facts: PartitionFacts;
  readonly verdict: PartitionVerdict;
}

export async function runPartitionCampaign(options: PartitionCampaignOptions): Promise<JudgedPartition[]> {
  const pool = new pg.Pool({ connectionString: options.databaseUrl, max: 4 });
  pool.on('error', () => undefined);
  const schema = `partition_${randomUUID().slice(0, 8)}`;
  const workflowTaskQueue = `partition-workflows-${randomUUID().slice(0, 8)}`;
  const services = { ...options, pool, schema, workflowTaskQueue };
  const workflows = await WorkflowWorker.start(options.temporalAddress, options.workflowBundlePath, workflowTaskQueue);
  try {
    await migrate(pool, { schema });
    const queue = options.kinds.flatMap((kind) => Array.from({ length: options.runsPerKind }, (_, run) => ({ kind, run })));
    const judged: JudgedPartition[] = [];
    const next = async (): Promise<void> => {
      for (let item = queue.shift(); item; item = queue.shift()) {
        const facts = await runPartition(item.kind, runSeed(options.seed, item.kind.name, item.run), services);
        const verdict = judgePartition(facts);
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

function runLine(facts: PartitionFacts, verdict: PartitionVerdict): string {
  const outcome = facts.outcome.kind === 'completed' || facts.outcome.kind === 'open' ? facts.outcome.kind : `${facts.outcome.kind} ${facts.outcome.type}`;
  return (
    `  ${facts.point} (run seed ${facts.seed}, ${facts.notes.join(', ')}): ${facts.reached ? '' : 'NOT REACHED, '}${outcome}; ` +
    `${facts.actions.length} charge(s) for ${facts.orderIds.length} order(s), double ${verdict.doubleCalls}, lost ${verdict.lostActions}, ` +
    `refusals ${verdict.refusals}, reconciled ${verdict.reconciled}, taken over ${verdict.takenOver}, late writes refused ${verdict.lateRefused}` +
    `${verdict.lateHung ? ` (${verdict.lateHung} settling write(s) hung)` : ''}${verdict.lateObeyed ? `, OBEYED ${verdict.lateObeyed}` : ''}; ${facts.seconds.toFixed(1)} s`
  );
}
