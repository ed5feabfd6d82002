/**
 * `npm run chaos`: the chaos run on its own Temporal dev server and Postgres.
 * `npm run chaos -- --quick` for a shorter run. Exits 1 if any key reached the
 * vendor twice or a workflow ended in anything but completion or a named refusal.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DefaultLogger, Runtime, bundleWorkflowCode } from '@temporalio/worker';
import { startTemporal } from '../../dev/temporal-server.js';
import { runChaos } from './chaos.js';
import { printReport, problemsIn } from './report.js';
import { workflowInterceptorModules } from '../../dev/workflow-interceptors.js';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean' },
    workflows: { type: 'string' },
    'activities-per-workflow': { type: 'string' },
    workers: { type: 'string' },
    'kill-every': { type: 'string' },
  },
});
const quick = values.quick ?? false;
Runtime.install({ logger: new DefaultLogger('ERROR') });

const temporal = await startTemporal({ log: console.log });
const dir = await mkdtemp(join(tmpdir(), 'temporal-idempotency-chaos-'));
try {
  const bundle = await bundleWorkflowCode({
    workflowsPath: fileURLToPath(new URL('./workflows.ts', import.meta.url)),
    workflowInterceptorModules,
    logger: new DefaultLogger('ERROR'),
  });
  await writeFile(join(dir, 'workflows.js'), bundle.code);
  const report = await runChaos({
    client: temporal.env.client,
    temporalAddress: temporal.address,
    workflowBundlePath: join(dir, 'workflows.js'),
    workflows: Number(values.workflows ?? (quick ? 20 : 100)),
    activitiesPerWorkflow: Number(values['activities-per-workflow'] ?? 5),
    workers: Number(values.workers ?? 3),
    killEveryMs: Number(values['kill-every'] ?? 3_000),
    log: console.log,
  });
  printReport(report, console.log);
  console.log(JSON.stringify({ chaos: report }));
  process.exitCode = problemsIn(report).length === 0 ? 0 : 1;
} finally {
  await rm(dir, { recursive: true, force: true });
  await temporal.stop();
}
