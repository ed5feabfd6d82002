/**
 * IdempotencyPlugin, the idiomatic registration: outermost interceptor, the
 * workflow interceptors in the bundle, settings checked against the worker's
 * activities.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DefaultLogger, Worker, bundleWorkflowCode } from '@temporalio/worker';
import type { ActivityInterceptorsFactory, WorkerPlugin } from '@temporalio/worker';
import { IdempotencyConfigError, IdempotencyPlugin, PostgresClaimStore } from '../../src/index.js';
import { PENDING_REFUSALS_QUERY } from '../../src/operator-decision.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

describe('IdempotencyPlugin', () => {
  it('guards the worker\'s activities, outermost, and answers repeats from the record', async () => {
    let bodies = 0;
    const seenByOther: string[] = [];
    const other: ActivityInterceptorsFactory = (context) => ({
      inbound: { execute: async (input, next) => (seenByOther.push(context.info.activityType), next(input)) },
    });
    const taskQueue = uniqueName('tq');
    const workflowId = uniqueName('wf');
    const worker = await Worker.create({
      connection: temporal.nativeConnection,
      taskQueue,
      workflowBundle: temporal.workflowBundle,
      activities: { send: async () => ++bodies },
      interceptors: { activity: [other] },
      plugins: [new IdempotencyPlugin({ store: schema.store })],
    });
    const results = await worker.runUntil(
      temporal.client.workflow.execute('callActivity', { taskQueue, workflowId, args: [{ activity: 'send', args: [], times: 3 }] }),
    );
    expect(results).toEqual([1, 1, 1]);
    expect(bodies).toBe(1);
    // The repeats were answered outside the other interceptor: it saw the one real call only.
    expect(seenByOther).toEqual(['send']);
  });

  it('refuses a setting for an activity the worker does not register, naming the near match', async () => {
    const plugin = new IdempotencyPlugin({ store: schema.store, activities: { chargeCrad: { vendorDedup: true } } });
    const created = Worker.create({
      connection: temporal.nativeConnection,
      taskQueue: uniqueName('tq'),
      workflowBundle: temporal.workflowBundle,
      activities: { chargeCard: async () => 'ok' },
      plugins: [plugin],
    });
    await expect(created).rejects.toThrow(IdempotencyConfigError);
    await expect(created).rejects.toThrow(/activities\.chargeCrad: no activity chargeCrad is registered on this worker; did you mean chargeCard\?/);
  });

  it('stays outermost when a later plugin puts its own activity interceptor in front', async () => {
    let bodies = 0;
    const seenByPushy: string[] = [];
    const pushy: WorkerPlugin = {
      name: 'pushy',
      configureWorker: (options) => ({
        ...options,
        interceptors: {
          ...options.interceptors,
          activity: [
            (context) => ({ inbound: { execute: async (input, next) => (seenByPushy.push(context.info.activityType), next(input)) } }),
            ...(options.interceptors?.activity ?? []),
          ],
        },
      }),
    };
    const taskQueue = uniqueName('tq');
    const worker = await Worker.create({
      connection: temporal.nativeConnection,
      taskQueue,
      workflowBundle: temporal.workflowBundle,
      activities: { send: async () => ++bodies },
      plugins: [new IdempotencyPlugin({ store: schema.store }), pushy],
    });
    const results = await worker.runUntil(
      temporal.client.workflow.execute('callActivity', { taskQueue, workflowId: uniqueName('wf'), args: [{ activity: 'send', args: [], times: 2 }] }),
    );
    expect(results).toEqual([1, 1]);
    expect(seenByPushy).toEqual(['send']); // the repeat never got past idempotency
  });

  it('adds the workflow interceptors to bundleWorkflowCode', async () => {
    const store = new PostgresClaimStore({ pool: schema.pool, schema: schema.name });
    const plugin = new IdempotencyPlugin({ store });
    const bundle = await bundleWorkflowCode({
      workflowsPath: fileURLToPath(new URL('../support/workflows.ts', import.meta.url)),
      plugins: [plugin],
      logger: new DefaultLogger('WARN'),
    });
    const taskQueue = uniqueName('tq');
    const worker = await Worker.create({ connection: temporal.nativeConnection, taskQueue, workflowBundle: bundle, plugins: [plugin] });
    await worker.runUntil(async () => {
      const handle = await temporal.client.workflow.start('idleThenContinue', { taskQueue, workflowId: uniqueName('wf'), args: [{ continued: true }] });
      // Answered by the handler the workflow interceptors install at the workflow's start.
      expect(await handle.query(PENDING_REFUSALS_QUERY)).toEqual([]);
      await handle.terminate();
    });
  });
});
