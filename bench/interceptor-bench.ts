/**
 * Interceptor cost on a real Temporal server: one workflow runs N trivial
 * activities, 50 at a time, on a worker without the idempotency interceptor
 * and on one with it, alternating (without, with, without, with...) so drift
 * on the shared machine hits both. Then the same pair with one activity in
 * flight, where nothing queues, to show the per-call cost on its own.
 */
import { fileURLToPath } from 'node:url';
import { DefaultLogger, bundleWorkflowCode } from '@temporalio/worker';
import type { TemporalServer } from '../dev/temporal-server.js';
import type { BenchOptions } from './options.js';
import type { CpuRoots } from './cpu-usage.js';
import { withFreshSchema } from './schema.js';
import { runWorker } from './worker-run.js';
import type { InterceptorRun, Load, RunSetup } from './worker-run.js';
import { workflowInterceptorModules } from '../dev/workflow-interceptors.js';

export interface InterceptorResults {
  readonly loaded: readonly InterceptorRun[];
  readonly oneInFlight: readonly InterceptorRun[];
}

export async function benchInterceptor(
  temporal: TemporalServer,
  connectionString: string,
  options: BenchOptions,
  cpuRoots: CpuRoots,
  log: (line: string) => void,
): Promise<InterceptorResults> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: fileURLToPath(new URL('./workflows.ts', import.meta.url)),
    workflowInterceptorModules,
    logger: new DefaultLogger('WARN'),
  });
  return withFreshSchema(connectionString, 'interceptor', async (schema) => {
    const setup: RunSetup = { temporal, connectionString, schema, code, cpuRoots, profile: options.profile };
    const loaded = await alternate(setup, options.rounds, options.loaded, log);
    const oneInFlight = await alternate(setup, options.rounds, options.oneInFlight, log);
    return { loaded, oneInFlight };
  });
}

async function alternate(setup: RunSetup, rounds: number, load: Load, log: (line: string) => void): Promise<InterceptorRun[]> {
  const runs: InterceptorRun[] = [];
  for (let round = 1; round <= rounds; round++) {
    for (const mode of ['without', 'with'] as const) {
      const run = await runWorker(setup, mode, load);
      log(`interceptor ${load.inFlight} in flight, round ${round}, ${mode}: ${(run.activities / run.seconds).toFixed(0)} activities/s`);
      runs.push(run);
    }
  }
  return runs;
}
