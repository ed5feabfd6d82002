/**
 * The fake vendor and the example worker processes of one test file: started
 * for it, and stopped (workers with SIGKILL) after it.
 */
import { afterAll, beforeAll, inject } from 'vitest';
import { FakeVendor } from '../../activities/fake-vendor.js';
import { spawnExampleWorker } from '../../dev/worker-process.js';
import type { ExampleWorkerOptions, WorkerProcess } from '../../dev/worker-process.js';
import type { TestSchema } from './schema.js';

export function useVendor(): FakeVendor {
  const vendor = new FakeVendor();
  beforeAll(() => vendor.start());
  afterAll(() => vendor.stop());
  return vendor;
}

export interface ExampleWorkers {
  /** Starts the example worker as a child process on `taskQueue`, against the test's schema and vendor. */
  spawn(taskQueue: string, options?: Partial<ExampleWorkerOptions>): Promise<WorkerProcess>;
}

export function useExampleWorkers(vendor: FakeVendor, schema: TestSchema): ExampleWorkers {
  const processes: WorkerProcess[] = [];
  afterAll(async () => {
    for (const worker of processes) worker.kill('SIGKILL');
    await Promise.all(processes.map((worker) => worker.exited));
  });
  return {
    async spawn(taskQueue, options = {}) {
      const worker = await spawnExampleWorker({
        temporalAddress: inject('temporalAddress'),
        databaseUrl: inject('databaseUrl'),
        workflowBundlePath: inject('workflowBundlePath'),
        taskQueue,
        vendorUrl: vendor.url,
        schema: schema.name,
        ...options,
      });
      processes.push(worker);
      return worker;
    },
  };
}
