/**
 * `npm run chaos -- --crash-points [--seed N] [--runs-per-point N] [--points a,b] [--concurrency N]`:
 * starts its own Temporal dev server and Postgres (embedded, or DATABASE_URL), runs every crash
 * point, prints the seed, each run, and the table; exits 1 on a double call, a lost action, a
 * workflow left open, a point not reached, or a worker that died on its own.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPostgres } from '../../../dev/postgres.js';
import { startTemporal } from '../../../dev/temporal-server.js';
import { runCampaign } from './campaign.js';
import { CRASH_POINTS } from './points.js';
import { formatTable, pointRows, problemsIn } from './table.js';
import { bundleChaosWorkflows } from '../workflow-bundle.js';

export interface CrashPointsFlags {
  readonly seed?: string | undefined;
  readonly 'runs-per-point'?: string | undefined;
  readonly points?: string | undefined;
  readonly concurrency?: string | undefined;
}

export async function crashPointsCommand(flags: CrashPointsFlags, log: (line: string) => void): Promise<number> {
  const seed = flags.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : wholeNumber('--seed', flags.seed);
  const runsPerPoint = flags['runs-per-point'] === undefined ? 3 : wholeNumber('--runs-per-point', flags['runs-per-point']);
  const concurrency = flags.concurrency === undefined ? 3 : wholeNumber('--concurrency', flags.concurrency);
  const wanted = flags.points?.split(',').map((name) => name.trim());
  const points = wanted ? CRASH_POINTS.filter((point) => wanted.includes(point.id)) : CRASH_POINTS;
  if (wanted && points.length !== wanted.length) {
    log(`--points names one of: ${CRASH_POINTS.map((point) => point.id).join(', ')}`);
    return 2;
  }
  log(`Crash points: seed ${seed}, ${runsPerPoint} run(s) per point, ${concurrency} at a time`);
  const temporal = await startTemporal({ log });
  const postgres = await startPostgres();
  const dir = await mkdtemp(join(tmpdir(), 'temporal-idempotency-crash-points-'));
  try {
    const workflowBundlePath = await bundleChaosWorkflows(dir);
    const started = Date.now();
    const runs = await runCampaign({
      client: temporal.env.client,
      temporalAddress: temporal.address,
      databaseUrl: postgres.connectionString,
      workflowBundlePath,
      points,
      seed,
      runsPerPoint,
      concurrency,
      log,
    });
    log(`\nCrash points, seed ${seed}, ${runsPerPoint} run(s) per point, ${((Date.now() - started) / 1000).toFixed(0)} s:\n`);
    log(formatTable(pointRows(runs, points.map((point) => point.name))));
    const problems = problemsIn(runs);
    log(problems.length === 0 ? '\nNo double call, no lost action, no workflow left open.' : `\nPROBLEMS:\n  ${problems.join('\n  ')}`);
    log(`Again: npm run chaos -- --crash-points --seed ${seed} --runs-per-point ${runsPerPoint}${wanted ? ` --points ${wanted.join(',')}` : ''}`);
    return problems.length === 0 ? 0 : 1;
  } finally {
    await rm(dir, { recursive: true, force: true });
    await postgres.stop();
    await temporal.stop();
  }
}

export function wholeNumber(flag: string, text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${flag} needs a whole number, 0 or more; got ${text}.`);
  return value;
}
