/**
 * `npm run chaos -- --partitions [--seed N] [--runs-per-kind N] [--kinds a,b] [--concurrency N]`:
 * starts its own Temporal dev server and Postgres (embedded, or DATABASE_URL), runs every partition
 * kind, prints the seed, each run, and the table; exits 1 on a double call, a lost action, a workflow
 * left open, a partition not reached, a worker that died on its own, or a late write not refused.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPostgres } from '../../../dev/postgres.js';
import { startTemporal } from '../../../dev/temporal-server.js';
import { wholeNumber } from '../crash-points/command.js';
import { bundleChaosWorkflows } from '../workflow-bundle.js';
import { runPartitionCampaign } from './campaign.js';
import { PARTITION_KINDS } from './kinds.js';
import { formatPartitionTable, partitionProblems, partitionRows } from './table.js';

export interface PartitionsFlags {
  readonly seed?: string | undefined;
  readonly 'runs-per-kind'?: string | undefined;
  readonly kinds?: string | undefined;
  readonly concurrency?: string | undefined;
}

export async function partitionsCommand(flags: PartitionsFlags, log: (line: string) => void): Promise<number> {
  const seed = flags.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : wholeNumber('--seed', flags.seed);
  const runsPerKind = flags['runs-per-kind'] === undefined ? 3 : wholeNumber('--runs-per-kind', flags['runs-per-kind']);
  const concurrency = flags.concurrency === undefined ? 2 : wholeNumber('--concurrency', flags.concurrency);
  const wanted = flags.kinds?.split(',').map((name) => name.trim());
  const kinds = wanted ? PARTITION_KINDS.filter((kind) => wanted.includes(kind.id)) : PARTITION_KINDS;
  if (wanted && kinds.length !== wanted.length) {
    log(`--kinds names one of: ${PARTITION_KINDS.map((kind) => kind.id).join(', ')}`);
    return 2;
  }
  log(`Partitions: seed ${seed}, ${runsPerKind} run(s) per kind, ${concurrency} at a time`);
  const temporal = await startTemporal({ log });
  const postgres = await startPostgres();
  const dir = await mkdtemp(join(tmpdir(), 'temporal-idempotency-partitions-'));
  try {
    const workflowBundlePath = await bundleChaosWorkflows(dir);
    const started = Date.now();
    const runs = await runPartitionCampaign({
      client: temporal.env.client,
      temporalAddress: temporal.address,
      databaseUrl: postgres.connectionString,
      workflowBundlePath,
      kinds,
      seed,
      runsPerKind,
      concurrency,
      log,
    });
    log(`\nPartitions, seed ${seed}, ${runsPerKind} run(s) per kind, ${((Date.now() - started) / 1000).toFixed(0)} s:\n`);
    log(formatPartitionTable(partitionRows(runs, kinds.map((kind) => kind.name))));
    const problems = partitionProblems(runs);
    log(
      problems.length === 0
        ? '\nNo double call, no lost action, no workflow left open; every late write on a claim taken over was refused by its token.'
        : `\nPROBLEMS:\n  ${problems.join('\n  ')}`,
    );
    log(`Again: npm run chaos -- --partitions --seed ${seed} --runs-per-kind ${runsPerKind}${wanted ? ` --kinds ${wanted.join(',')}` : ''}`);
    return problems.length === 0 ? 0 : 1;
  } finally {
    await rm(dir, { recursive: true, force: true });
    await postgres.stop();
    await temporal.stop();
  }
}
