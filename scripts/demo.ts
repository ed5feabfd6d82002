/**
 * `npm run demo`: the library's promise, shown on real services.
 *
 * Starts Postgres (embedded, or DATABASE_URL), a Temporal dev server with its
 * Web UI (or TEMPORAL_ADDRESS), a fake vendor, and the example worker as a
 * separate process. Then:
 *   1. a charge meets a transient vendor error, is retried, and goes out once;
 *   2. the workflow is reset and re-run: the charge answers from its record;
 *   3. the worker is killed with SIGKILL right after the vendor placed a call;
 *      the retry asks the vendor (by the idempotency key), learns it happened,
 *      and completes with its receipt instead of calling twice;
 *   4. the same, with the vendor's lookup down: nobody can tell, so the retry
 *      is refused with IdempotencyOrphanedClaim instead of calling twice.
 * Exits 0 and leaves nothing running. `npm run demo -- --keep-open` keeps the
 * servers up until Ctrl-C or SIGTERM, to look at the refusal in the Web UI and
 * follow the README's runbook on it. Stopped by a signal at any point, it stops
 * what it started and deletes the embedded Postgres data before it exits.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { ApplicationFailure } from '@temporalio/client';
import type { Client } from '@temporalio/client';
import { DefaultLogger, Runtime, bundleWorkflowCode } from '@temporalio/worker';
import { migrate } from '../src/index.js';
import type { RefusalDetails } from '../src/index.js';
import { CALL_ROUTE, CHARGE_ROUTE } from '../activities/index.js';
import { FakeVendor, LOOKUP_ROUTE } from '../activities/fake-vendor.js';
import type { OrderInput, OrderResult } from '../workflows/index.js';
import { applicationFailureIn } from '../dev/failures.js';
import { activityFailedAt } from '../dev/history.js';
import { startPostgres } from '../dev/postgres.js';
import { startTemporal } from '../dev/temporal-server.js';
import { Teardown, exitCodeFor, firstStopSignal } from '../dev/teardown.js';
import { spawnExampleWorker } from '../dev/worker-process.js';
import type { ExampleWorkerOptions, WorkerProcess } from '../dev/worker-process.js';
import { workflowInterceptorModules } from '../dev/workflow-interceptors.js';

const keepOpen = process.argv.includes('--keep-open');
/** Short, so the dead worker is recognised within seconds; the library's default is 30 s. */
const DEMO_LEASE_MS = 3_000;
const say = (text = '') => console.log(text);
const step = (text: string) => say(`\n== ${text}`);
const teardown = new Teardown();

// No worker runs in this process (they are child processes), and the demo answers stop signals itself.
Runtime.install({ logger: new DefaultLogger('ERROR'), shutdownSignals: [] });

// A closed terminal (SIGHUP) makes writes fail; that must not cut the teardown short.
for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
const stopSignal = firstStopSignal(() => say('Still stopping the servers…'));
const first = await Promise.race([
  main().then(() => null, (error: unknown) => ({ error })),
  stopSignal.then((signal) => ({ signal })),
]);
let exitCode = 0;
if (first === null) {
  if (keepOpen) {
    say('Servers stay up until you press Ctrl-C (or send SIGTERM); then they stop and their data is deleted.');
    const keepAlive = setInterval(() => undefined, 60_000); // signals alone do not keep Node waiting
    await stopSignal;
    clearInterval(keepAlive);
  }
} else if ('error' in first) {
  console.error('\nThe demo failed:', first.error);
  exitCode = 1;
} else {
  say(`\nInterrupted (${first.signal}): stopping the servers and deleting their data.`);
  exitCode = exitCodeFor(first.signal);
  // The scene cut short fails in library callbacks once its servers are gone; that must not cut the teardown short.
  process.on('uncaughtException', () => undefined);
  process.on('unhandledRejection', () => undefined);
}
// Some stops wait on a native call (the dev server's shutdown) that holds no handle of its own: without
// one, Node may find nothing left to wait for and end mid-teardown with exit 13 (a top-level await unsettled).
setInterval(() => undefined, 60_000);
await teardown.done();
// Explicit: a scene cut short may hold handles open (a client waiting on a server that is gone).
process.exit(exitCode);

async function main(): Promise<void> {
  step('Starting Postgres, a Temporal dev server with its Web UI, and a fake vendor');
  const postgres = await teardown.start(() => startPostgres(), (server) => server.stop());
  const temporal = await teardown.start(() => startTemporal({ ui: true, log: say }), (server) => server.stop());
  const vendor = new FakeVendor();
  await teardown.start(() => vendor.start(), () => vendor.stop());
  const pool = new pg.Pool({ connectionString: postgres.connectionString });
  pool.on('error', () => undefined); // an idle connection cut when Postgres stops; the pool replaces it
  teardown.add(() => pool.end());
  const { applied } = await migrate(pool);
  const schema = `schema temporal_idempotency, migrations applied: ${applied.length}`;
  say(
    postgres.embedded
      ? `Postgres: embedded, its data in ${postgres.dataDirectory} (deleted when the demo exits); ${schema}.`
      : `Postgres: DATABASE_URL; ${schema}.`,
  );
  say(`Temporal: ${temporal.address}, namespace ${temporal.namespace}${temporal.uiUrl ? `, Web UI ${temporal.uiUrl}` : ''}. Vendor: ${vendor.url}.`);
  say('For the runbook in the README ("A refusal happened: what now"), in another shell in this directory:');
  say(`  export DATABASE_URL=${postgres.connectionString} TEMPORAL_ADDRESS=${temporal.address} TEMPORAL_NAMESPACE=${temporal.namespace} VENDOR_URL=${vendor.url}`);
  if (temporal.cliPath) say(`  alias temporal=${temporal.cliPath}  # the Temporal CLI that runs this dev server`);
  say('The example worker has no payload converter, codec or secret, so the CLI needs no --worker-config.');

  const bundleDir = await teardown.start(
    () => mkdtemp(join(tmpdir(), 'temporal-idempotency-demo-')),
    (dir) => rm(dir, { recursive: true, force: true }),
  );
  const bundle = await bundleWorkflowCode({
    workflowsPath: fileURLToPath(new URL('../workflows/index.ts', import.meta.url)),
    workflowInterceptorModules,
    logger: new DefaultLogger('ERROR'),
  });
  await writeFile(join(bundleDir, 'workflows.js'), bundle.code);
  const workerOptions: ExampleWorkerOptions = {
    temporalAddress: temporal.address,
    databaseUrl: postgres.connectionString,
    taskQueue: `demo-${randomUUID().slice(0, 8)}`,
    vendorUrl: vendor.url,
    workflowBundlePath: join(bundleDir, 'workflows.js'),
    leaseMs: DEMO_LEASE_MS,
    reconcile: true,
  };
  const workerA = await startWorker(workerOptions, 'A');
  const client = temporal.env.client;

  const first = await transientErrorScene(client, vendor, workerOptions.taskQueue);
  await resetScene(client, vendor, first);
  const workerB = await reconcileScene(client, vendor, workerOptions, workerA);
  const refused = await crashScene(client, vendor, workerOptions, workerB);

  step('Where to see it');
  if (temporal.uiUrl) {
    say(`The refusal is in the Web UI, on the workflow's page, as the failure of placeCall:`);
    say(`  ${temporal.uiUrl}/namespaces/${temporal.namespace}/workflows/${refused.workflowId}/${refused.runId}/history`);
  }
  say(`The refused key is ${refused.key}, of workflow ${refused.workflowId}.`);
  if (!keepOpen && temporal.uiUrl) {
    say('(This dev server stops when the demo exits; run `npm run demo -- --keep-open` to browse it.)');
  }
}

async function startWorker(options: ExampleWorkerOptions, name: string): Promise<WorkerProcess> {
  // A stop signal while the worker starts kills it at once (its spawn is aborted).
  const worker = await teardown.start(
    () => spawnExampleWorker(options, { signal: teardown.signal }),
    async (started) => {
      started.kill('SIGTERM');
      await started.exited;
    },
  );
  say(`Worker ${name} is running as process ${worker.pid}, with the idempotency interceptor.`);
  return worker;
}

function order(label: string, activityTimeoutMs?: number): OrderInput {
  return {
    charge: { orderId: `${label}-${randomUUID().slice(0, 6)}`, customerId: 'cus_ada', amountCents: 4_999, currency: 'EUR' },
    phone: '+49 30 1234567',
    ...(activityTimeoutMs ? { activityTimeoutMs } : {}),
  };
}

async function transientErrorScene(client: Client, vendor: FakeVendor, taskQueue: string) {
  step('1. A transient vendor error: retried, and the card is charged once');
  vendor.script(CHARGE_ROUTE, 'unavailable');
  const input = order('order-1');
  const handle = await client.workflow.start('orderWorkflow', { taskQueue, workflowId: input.charge.orderId, args: [input] });
  const result = (await handle.result()) as OrderResult;
  say(`The vendor answered the first charge request 503 (nothing done); the interceptor released the claim,`);
  say(`Temporal retried, and the charge went through: ${result.charge.id}.`);
  say(`Vendor: ${vendor.requestsTo(CHARGE_ROUTE)} charge requests received, ${vendor.actionsOn(CHARGE_ROUTE).length} charge made.`);
  return { handle, result };
}

async function resetScene(client: Client, vendor: FakeVendor, first: Awaited<ReturnType<typeof transientErrorScene>>) {
  step('2. The same workflow reset and re-run: its writes answer from the record');
  const history = await first.handle.fetchHistory();
  const firstTask = history.events?.find((event) => event.workflowTaskCompletedEventAttributes != null);
  const { runId } = await client.workflowService.resetWorkflowExecution({
    namespace: client.options.namespace,
    workflowExecution: { workflowId: first.handle.workflowId, runId: first.handle.firstExecutionRunId },
    workflowTaskFinishEventId: firstTask!.eventId,
    requestId: randomUUID(),
    reason: 'demo: re-run a completed order',
  });
  const again = (await client.workflow.getHandle(first.handle.workflowId, runId!).result()) as OrderResult;
  const same = again.charge.id === first.result.charge.id && again.call.id === first.result.call.id;
  say(`The re-run returned ${same ? 'the same' : 'DIFFERENT'} receipts (${again.charge.id}, ${again.call.id}).`);
  say(`Vendor: still ${vendor.actionsOn(CHARGE_ROUTE).length} charge made and ${vendor.actionsOn(CALL_ROUTE).length} call placed.`);
  if (!same) throw new Error('a reset re-run produced new vendor actions');
}

/** Starts an order whose call the vendor places and never answers, then kills `victim`; returns the order's handle. */
async function killAfterTheCall(client: Client, vendor: FakeVendor, workerOptions: ExampleWorkerOptions, victim: WorkerProcess, label: string) {
  vendor.script(CALL_ROUTE, 'hang-after-performing');
  const input = order(label, 3_000);
  const placed = vendor.nextAction(CALL_ROUTE);
  const handle = await client.workflow.start('orderWorkflow', { taskQueue: workerOptions.taskQueue, workflowId: input.charge.orderId, args: [input] });
  await placed;
  say(`The vendor placed the confirmation call; before it could answer, the worker gets SIGKILL.`);
  victim.kill('SIGKILL');
  const killedAt = Date.now();
  await victim.exited;
  return { handle, killedAt };
}

async function reconcileScene(client: Client, vendor: FakeVendor, workerOptions: ExampleWorkerOptions, workerA: WorkerProcess) {
  step('3. The worker dies mid-call: the retry asks the vendor, and completes without calling again');
  const callsBefore = vendor.actionsOn(CALL_ROUTE).length;
  const { handle } = await killAfterTheCall(client, vendor, workerOptions, workerA, 'order-2');
  const workerB = await startWorker(workerOptions, 'B');
  say(`Temporal retries on worker B once attempt 1 times out (3 s); its lease (${DEMO_LEASE_MS / 1000} s) lapses, and B asks`);
  say(`the vendor what became of the request with the call's idempotency key (placeCall's reconcile).`);
  const result = (await handle.result()) as OrderResult;
  const calls = vendor.actionsOn(CALL_ROUTE).length - callsBefore;
  say(`The vendor answered: it happened. The workflow completed with the original receipt ${result.call.id}.`);
  say(`Vendor: ${calls} call placed for this order. Nobody was called twice, and nobody was paged.`);
  if (calls !== 1) throw new Error(`expected exactly one call, the vendor placed ${calls}`);
  return workerB;
}

async function crashScene(client: Client, vendor: FakeVendor, workerOptions: ExampleWorkerOptions, workerB: WorkerProcess) {
  step("4. The same, with the vendor's lookup down: nobody can tell, so the retry is refused, not repeated");
  const callsBefore = vendor.actionsOn(CALL_ROUTE).length;
  vendor.script(LOOKUP_ROUTE, 'unavailable');
  const { handle, killedAt } = await killAfterTheCall(client, vendor, workerOptions, workerB, 'order-3');
  await startWorker(workerOptions, 'C');
  say(`Worker C retries; the vendor's lookup answers 503, so what happened cannot be known…`);
  const failure = await handle.result().then(
    () => {
      throw new Error('the workflow completed: the call was made twice or never refused');
    },
    (error: unknown) => refusalIn(error),
  );
  const details = failure.details?.[0] as RefusalDetails;
  const refusedAfterMs = (await activityFailedAt(handle)) - killedAt;
  say(`${(refusedAfterMs / 1000).toFixed(1)} s after the kill, attempt ${details.refusedAttempt} was refused: ${failure.type} (non-retryable: ${failure.nonRetryable}).`);
  say(`  "${failure.message}"`);
  const calls = vendor.actionsOn(CALL_ROUTE).length - callsBefore;
  say(`Vendor: ${calls} call placed for this order. Nobody was called twice.`);
  if (calls !== 1) throw new Error(`expected exactly one call, the vendor placed ${calls}`);
  return { key: details.key, workflowId: handle.workflowId, runId: handle.firstExecutionRunId };
}

function refusalIn(error: unknown): ApplicationFailure {
  const failure = applicationFailureIn(error);
  if (!failure) throw new Error(`the workflow failed without an ApplicationFailure: ${String(error)}`, { cause: error });
  return failure;
}
