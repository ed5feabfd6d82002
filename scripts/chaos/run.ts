/**
 * `npm run chaos`: the chaos run on its own Temporal dev server and Postgres.
 * `npm run chaos -- --quick` for a shorter run. Exits 1 if any key reached the
 * vendor twice, a workflow ended in anything but completion or a named refusal,
 * a worker process died on its own, or Postgres was restarted mid-run fewer
 * times than asked (`--postgres-restarts`, default 2). With DATABASE_URL set it
 * cannot restart that server, so it refuses to start (exit 2) unless asked for
 * `--postgres-restarts 0`: a run that never lost its database must not pass for
 * one that survived two restarts.
 *
 * `npm run chaos -- --crash-points`: instead, a SIGKILL at each named point of an attempt
 * (./crash-points/command.ts).
 *
 * `npm run chaos -- --partitions`: instead, one worker cut off from Postgres or from Temporal while
 * its calls are in flight, then healed (./partitions/command.ts).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { startTemporal } from '../../dev/temporal-server.js';
import { restartsImpossibleOn, runChaos } from './chaos.js';
import { printReport, problemsIn } from './report.js';
import type { ChaosReport } from './report.js';
import { crashPointsCommand } from './crash-points/command.js';
import { partitionsCommand } from './partitions/command.js';
import { bundleChaosWorkflows } from './workflow-bundle.js';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean' },
    workflows: { type: 'string' },
    'activities-per-workflow': { type: 'string' },
    workers: { type: 'string' },
    'kill-every': { type: 'string' },
    reconcile: { type: 'string' },
    'postgres-restarts': { type: 'string' },
    'crash-points': { type: 'boolean' },
    seed: { type: 'string' },
    'runs-per-point': { type: 'string' },
    points: { type: 'string' },
    concurrency: { type: 'string' },
    partitions: { type: 'boolean' },
    'runs-per-kind': { type: 'string' },
    kinds: { type: 'string' },
  },
});
if (values['crash-points']) {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  process.exit(await crashPointsCommand(values, console.log));
}
if (values.partitions) {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  process.exit(await partitionsCommand(values, console.log));
}
const postgresRestarts = Number(values['postgres-restarts'] ?? 2);
if (!Number.isInteger(postgresRestarts) || postgresRestarts < 0) {
  console.error(`--postgres-restarts needs a whole number, 0 or more; got ${values['postgres-restarts']}.`);
  process.exit(2);
}
if (process.env['DATABASE_URL'] && postgresRestarts > 0) {
  // Fail before minutes of servers and workflows, not after them with 0 restarts in the report.
  console.error(`Not running chaos: it must restart Postgres ${postgresRestarts} time(s) mid-run, but ${restartsImpossibleOn({ embedded: false })}.`);
  process.exit(2);
}
if (postgresRestarts === 0) console.log('WARNING: --postgres-restarts 0: this run does not restart Postgres, so it shows nothing about surviving a restart.');
/** `both` (default): the same run without, then with, the workers reconciling orphaned calls with the vendor. */
const variants = values.reconcile === 'on' ? [true] : values.reconcile === 'off' ? [false] : [false, true];
const quick = values.quick ?? false;
Runtime.install({ logger: new DefaultLogger('ERROR') });

const temporal = await startTemporal({ log: console.log });
const dir = await mkdtemp(join(tmpdir(), 'temporal-idempotency-chaos-'));
try {
  const workflowBundlePath = await bundleChaosWorkflows(dir);
  const reports: ChaosReport[] = [];
  for (const reconcile of variants) {
    const report = await runChaos({
      client: temporal.env.client,
      temporalAddress: temporal.address,
      workflowBundlePath,
      workflows: Number(values.workflows ?? (quick ? 20 : 100)),
      activitiesPerWorkflow: Number(values['activities-per-workflow'] ?? 5),
      workers: Number(values.workers ?? 3),
      killEveryMs: Number(values['kill-every'] ?? 3_000),
      postgresRestarts,
      reconcile,
      log: console.log,
    });
    printReport(report, console.log);
    console.log(JSON.stringify({ chaos: report }));
    reports.push(report);
  }
  if (reports.length === 2) {
    const refused = (report: (typeof reports)[number]) => report.outcomes['IdempotencyOrphanedClaim'] ?? 0;
    console.log(`Refusals for a person to clear: ${refused(reports[0]!)} without reconcile, ${refused(reports[1]!)} with it.`);
  }
  process.exitCode = reports.every((report) => problemsIn(report).length === 0) ? 0 : 1;
} finally {
  await rm(dir, { recursive: true, force: true });
  await temporal.stop();
}
