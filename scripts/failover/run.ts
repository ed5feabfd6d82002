/**
 * `npm run failover`: the failover run on its own Temporal dev server, once with
 * a synchronous standby and once with an asynchronous one (or `--sync` /
 * `--async` alone), and a table of both. Exits 1 when the synchronous run
 * breaks the oracle (a call twice, an action lost, a workflow not ended by
 * name, a worker dead); the asynchronous run's losses are the README's trap,
 * printed, not failed on. `--seed N` repeats where the primary dies.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { startTemporal } from '../../dev/temporal-server.js';
import { exitCodeFor, firstStopSignal } from '../../dev/teardown.js';
import type { Replication } from './cluster.js';
import { runFailover } from './failover.js';
import { haproxyInstalled } from './haproxy.js';
import { printTable, problemsIn } from './report.js';
import type { FailoverReport } from './report.js';
import { bundleChaosWorkflows } from '../chaos/workflow-bundle.js';

const { values } = parseArgs({
  options: {
    sync: { type: 'boolean' },
    async: { type: 'boolean' },
    seed: { type: 'string' },
    workflows: { type: 'string' },
    'activities-per-workflow': { type: 'string' },
    workers: { type: 'string' },
    'link-delay': { type: 'string' },
  },
});
if (!haproxyInstalled()) {
  console.error('HAProxy is not installed: apt-get install -y --no-install-recommends haproxy');
  process.exit(2);
}
const variants: Replication[] = values.sync && !values.async ? ['sync'] : values.async && !values.sync ? ['async'] : ['sync', 'async'];
const seed = Number(values.seed ?? Math.floor(Math.random() * 1_000_000));
const whole = (name: string, fallback: number) => {
  const value = Number(values[name as keyof typeof values] ?? fallback);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} needs a whole number above 0; got ${String(values[name as keyof typeof values])}.`);
  return value;
};
Runtime.install({ logger: new DefaultLogger('ERROR') });
const interrupted = new AbortController();
void firstStopSignal().then((signal) => {
  console.log(`${signal}: stopping Postgres, HAProxy and the workers`);
  process.exitCode = exitCodeFor(signal);
  interrupted.abort();
});

const temporal = await startTemporal({ log: console.log });
const dir = await mkdtemp(join(tmpdir(), 'temporal-idempotency-failover-run-'));
try {
  const workflowBundlePath = await bundleChaosWorkflows(dir);
  const reports: FailoverReport[] = [];
  for (const replication of variants) {
    const report = await runFailover({
      client: temporal.env.client,
      temporalAddress: temporal.address,
      workflowBundlePath,
      replication,
      seed,
      workflows: whole('workflows', 40),
      activitiesPerWorkflow: whole('activities-per-workflow', 5),
      workers: whole('workers', 3),
      linkDelayMs: whole('link-delay', 100),
      signal: interrupted.signal,
      log: console.log,
    });
    console.log(JSON.stringify({ failover: report }));
    reports.push(report);
  }
  console.log(`\nnpm run failover -- --seed ${seed}${variants.length === 1 ? ` --${variants[0]}` : ''}\n`);
  printTable(reports, console.log);
  for (const report of reports) {
    const problems = problemsIn(report);
    if (problems.length === 0) continue;
    const verdict = report.replication === 'sync' ? 'PROBLEMS with a synchronous standby' : 'What the asynchronous standby cost (the trap, not a failure)';
    console.log(`\n${verdict}:\n  ${problems.join('\n  ')}`);
  }
  const asynchronous = reports.find((report) => report.replication === 'async');
  if (asynchronous && asynchronous.claimsLost.length === 0 && asynchronous.recordsLost.length === 0) {
    console.log('\nThe asynchronous standby happened to lose nothing this time: the window is racy; try another --seed or a longer --link-delay.');
  }
  process.exitCode = reports.every((report) => report.replication === 'async' || problemsIn(report).length === 0) ? 0 : 1;
} finally {
  await rm(dir, { recursive: true, force: true });
  await temporal.stop();
  // The stop signals' handlers keep nothing alive; an interrupted run ends here with its signal's code.
  if (interrupted.signal.aborted) process.exit();
}
