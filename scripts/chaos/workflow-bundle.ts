/** The chaos workflows bundled once into `dir`, for the worker processes the chaos, crash-point and failover runs start. */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DefaultLogger, bundleWorkflowCode } from '@temporalio/worker';
import { workflowInterceptorModules } from '../../dev/workflow-interceptors.js';

/** Returns the bundle's path. */
export async function bundleChaosWorkflows(dir: string): Promise<string> {
  const bundle = await bundleWorkflowCode({
    workflowsPath: fileURLToPath(new URL('./workflows.ts', import.meta.url)),
    workflowInterceptorModules,
    logger: new DefaultLogger('ERROR'),
  });
  const path = join(dir, 'workflows.js');
  await writeFile(path, bundle.code);
  return path;
}
