/**
 * The example worker: the order workflow and its vendor activities, with the
 * idempotency interceptor registered. The demo and the crash tests run it as a
 * separate process so it can be killed with SIGKILL mid-call.
 *
 * Environment: TEMPORAL_ADDRESS, DATABASE_URL, TASK_QUEUE, VENDOR_URL,
 * optional TEMPORAL_NAMESPACE, IDEMPOTENCY_SCHEMA, IDEMPOTENCY_LEASE_MS,
 * VENDOR_DEDUP (comma-separated activity types whose vendor dedups on the key),
 * WORKFLOW_BUNDLE (prebuilt workflow code, to skip bundling), ACTIVITIES_ONLY=1.
 */
import { fileURLToPath } from 'node:url';
import { readFile } from 'node:fs/promises';
import pg from 'pg';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { WorkerOptions } from '@temporalio/worker';
import { PostgresClaimStore, idempotencyInterceptors } from '../src/index.js';
import { createActivities } from '../activities/index.js';
import { workflowInterceptorModules } from '../dev/workflow-interceptors.js';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`Set ${name} for the example worker.`);
  return value;
}

// Registered exactly as the README shows, with nothing added: the chaos run checks that this
// code survives Postgres restarts (the store guards the pool it is given).
const pool = new pg.Pool({ connectionString: required('DATABASE_URL'), max: 10, connectionTimeoutMillis: 5_000 });
const connection = await NativeConnection.connect({ address: required('TEMPORAL_ADDRESS') });
const bundlePath = process.env['WORKFLOW_BUNDLE'];
const workflows: Partial<WorkerOptions> =
  process.env['ACTIVITIES_ONLY'] === '1'
    ? {}
    : bundlePath
      ? { workflowBundle: { code: await readFile(bundlePath, 'utf8') } }
      : { workflowsPath: fileURLToPath(new URL('../workflows/index.ts', import.meta.url)) };

const worker = await Worker.create({
  connection,
  namespace: process.env['TEMPORAL_NAMESPACE'] ?? 'default',
  taskQueue: required('TASK_QUEUE'),
  ...workflows,
  activities: createActivities({ vendorUrl: required('VENDOR_URL') }),
  interceptors: {
    activity: idempotencyInterceptors({
      store: new PostgresClaimStore({ pool, schema: process.env['IDEMPOTENCY_SCHEMA'] }),
      // Append every call that goes out to the ledger, inside the idempotency check.
      audit: true,
      activities: Object.fromEntries(
        (process.env['VENDOR_DEDUP'] ?? '')
          .split(',')
          .filter(Boolean)
          .map((activityType) => [activityType, { vendorDedup: true }]),
      ),
      ...(process.env['IDEMPOTENCY_LEASE_MS'] ? { leaseMs: Number(process.env['IDEMPOTENCY_LEASE_MS']) } : {}),
    }),
    // Used when the worker bundles the workflows itself; a prebuilt WORKFLOW_BUNDLE already has them.
    workflowModules: workflowInterceptorModules,
  },
});

const running = worker.run();
console.log(`worker ready pid=${process.pid}`);
await running;
await pool.end();
await connection.close();
