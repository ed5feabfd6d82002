/**
 * The chaos run: many activities across several worker processes while a
 * random worker is SIGKILLed every few seconds (and restarted) and Postgres is
 * restarted several times. Afterwards: did any key reach the vendor twice, did
 * every workflow end completed or refused by name, and did any worker process
 * die that was not killed on purpose (the workers run the README's
 * registration code, with nothing added)?
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { Client } from '@temporalio/client';
import { migrate } from '../../src/index.js';
import { FakeVendor } from '../../activities/fake-vendor.js';
import { CALL_ROUTE, CHARGE_ROUTE } from '../../activities/index.js';
import type { ChaosBatch } from './workflows.js';
import { applicationFailureIn } from '../../dev/failures.js';
import { startPostgres } from '../../dev/postgres.js';
import { spawnExampleWorker } from '../../dev/worker-process.js';
import type { WorkerProcess } from '../../dev/worker-process.js';
import { repeatedActions } from './report.js';
import type { ChaosReport } from './report.js';

export interface ChaosOptions {
  readonly client: Client;
  readonly temporalAddress: string;
  /** Prebuilt bundle of ./workflows.ts. */
  readonly workflowBundlePath: string;
  readonly workflows: number;
  /** Activities per workflow; a fifth of them phone calls declared vendorDedup. */
  readonly activitiesPerWorkflow: number;
  readonly workers: number;
  readonly killEveryMs: number;
  /**
   * How many times Postgres is restarted (stopped for a second, then started) during the run. Default 2.
   * Fewer restarts than this is a problem in the report: with DATABASE_URL set (a server this run does
   * not own, so cannot restart) the run says so at its start and fails unless this is 0.
   */
  readonly postgresRestarts?: number;
  /** The workers ask the vendor about orphaned calls (the example activities' reconcile) before refusing. */
  readonly reconcile?: boolean;
  readonly log: (line: string) => void;
}

const LEASE_MS = 2_000;
/** The activity types the workers declare `vendorDedup`: they may send a key again, by design. */
const VENDOR_DEDUP_ACTIVITIES = ['placeCall'];
/** The vendor route each example activity posts to. */
const ROUTES: Readonly<Record<string, string>> = { chargeCard: CHARGE_ROUTE, placeCall: CALL_ROUTE };
const DEFAULT_POSTGRES_RESTARTS = 2;

/** Why a run on `postgres` cannot restart it, or null when it can. */
export function restartsImpossibleOn(postgres: { readonly embedded: boolean }): string | null {
  return postgres.embedded
    ? null
    : 'DATABASE_URL is set, and the chaos run cannot restart a server it does not run. Unset DATABASE_URL ' +
        '(the run then starts its own embedded Postgres and restarts it), or ask for no restarts (--postgres-restarts 0) ' +
        'and accept a run that does not test surviving one';
}

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const started = Date.now();
  const postgres = await startPostgres({ forceEmbedded: !process.env['DATABASE_URL'] });
  const restartsWanted = options.postgresRestarts ?? DEFAULT_POSTGRES_RESTARTS;
  const restartsImpossible = restartsWanted > 0 ? restartsImpossibleOn(postgres) : null;
  if (restartsImpossible) options.log(`WARNING: no Postgres restarts in this run, so it fails. ${restartsImpossible}.`);
  // The harness's own pool (reports, migrations), not a worker's: its restarts are expected here.
  const pool = new pg.Pool({ connectionString: postgres.connectionString, max: 4 });
  pool.on('error', () => undefined);
  const vendor = new FakeVendor({ latencyMs: 150 });
  await vendor.start();
  const taskQueue = `chaos-${randomUUID().slice(0, 8)}`;
  // Its own schema, so a run against a shared DATABASE_URL touches nothing else.
  const schema = `chaos_${randomUUID().slice(0, 8)}`;
  const killed = new Set<number>();
  const unexpectedExits: ChaosReport['unexpectedExits'][number][] = [];
  let stopping = false;
  const workers = new Set<WorkerProcess>();
  const spawning = new Set<Promise<unknown>>();
  let kills = 0;
  let postgresRestarts = 0;
  try {
    await migrate(pool, { schema });
    const spawn = async () => {
      const worker = await spawnExampleWorker({
        temporalAddress: options.temporalAddress,
        databaseUrl: postgres.connectionString,
        workflowBundlePath: options.workflowBundlePath,
        taskQueue,
        vendorUrl: vendor.url,
        schema,
        leaseMs: LEASE_MS,
        vendorDedup: VENDOR_DEDUP_ACTIVITIES,
        reconcile: options.reconcile ?? false,
      });
      workers.add(worker);
      void worker.exited.then(({ code, signal }) => {
        workers.delete(worker);
        if (!killed.has(worker.pid) && !stopping) {
          unexpectedExits.push({ pid: worker.pid, code, signal, lastOutput: worker.output().slice(-2_000) });
          options.log(`worker ${worker.pid} exited on its own (code ${code}, signal ${signal}); restarting it`);
          const respawn = spawn().catch((error: unknown) => options.log(`restarting a worker failed: ${String(error)}`));
          spawning.add(respawn);
          void respawn.finally(() => spawning.delete(respawn));
        }
      });
      return worker;
    };
    await Promise.all(Array.from({ length: options.workers }, spawn));
    options.log(`${options.workers} worker processes up on ${taskQueue}; starting ${options.workflows} workflows`);

    const results = startWorkflows(options, taskQueue);
    let done = false;
    void results.finally(() => (done = true));
    const total = options.workflows * options.activitiesPerWorkflow;
    // The first kill lands once a tenth of the calls went out, so it is always mid-run.
    const underWay = async () => {
      while (!done && vendor.actions.length < Math.ceil(total / 10)) await sleep(20);
    };
    const chaos = (async () => {
      await underWay();
      while (!done) {
        const victim = [...workers][Math.floor(Math.random() * workers.size)];
        if (victim) {
          killed.add(victim.pid);
          victim.kill('SIGKILL');
          kills++;
          await victim.exited;
          const respawn = spawn().catch((error: unknown) => options.log(`restarting a worker failed: ${String(error)}`));
          spawning.add(respawn);
          void respawn.finally(() => spawning.delete(respawn));
        }
        await sleep(options.killEveryMs * (0.5 + Math.random()));
      }
    })();
    const restarts = (async () => {
      if (restartsImpossible) return;
      await underWay();
      for (let restart = 0; restart < restartsWanted && !done; restart++) {
        options.log('Restarting Postgres');
        await postgres.pause();
        await sleep(1_000);
        await postgres.resume();
        postgresRestarts++;
        await sleep(options.killEveryMs * (1 + Math.random()));
      }
    })();
    const outcomes = await results;
    await Promise.all([chaos, restarts]);
    return await report(pool, schema, vendor, outcomes, {
      activities: options.workflows * options.activitiesPerWorkflow,
      workflows: options.workflows,
      kills,
      postgresRestarts,
      postgresRestartsWanted: restartsWanted,
      postgresRestartsImpossible: restartsImpossible,
      seconds: (Date.now() - started) / 1000,
      killed,
      unexpectedExits,
      reconcile: options.reconcile ?? false,
      reconciliations: await reconciliations(pool, schema),
    });
  } finally {
    stopping = true;
    await Promise.all(spawning); // a worker still starting must be stopped too
    for (const worker of workers) worker.kill('SIGTERM');
    await Promise.all([...workers].map((worker) => worker.exited));
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await pool.end();
    await vendor.stop();
    await postgres.stop();
  }
}

/** How the vendor answered the workers' questions about orphaned calls. */
async function reconciliations(pool: pg.Pool, schema: string): Promise<Record<string, number>> {
  const { rows } = await pool.query<{ answer: string; count: number }>(
    `SELECT answer, count(*)::integer AS count FROM "${schema}".ledger_reconciliations GROUP BY answer ORDER BY answer`,
  );
  return Object.fromEntries(rows.map((row) => [row.answer, row.count]));
}

async function startWorkflows(options: ChaosOptions, taskQueue: string): Promise<string[]> {
  const handles = await Promise.all(
    Array.from({ length: options.workflows }, (_, w) =>
      options.client.workflow.start('chaosBatchWorkflow', { taskQueue, workflowId: `chaos-${randomUUID()}`, args: [batch(w, options.activitiesPerWorkflow)] }),
    ),
  );
  return Promise.all(handles.map((handle) => handle.result().then(() => 'completed', failureType)));
}

function batch(index: number, size: number): ChaosBatch {
  const calls = Math.floor(size / 5);
  const order = `chaos-${index}-${randomUUID().slice(0, 6)}`;
  return {
    charges: Array.from({ length: size - calls }, (_, i) => ({ orderId: `${order}-${i}`, customerId: 'cus_chaos', amountCents: 100 + i, currency: 'EUR' })),
    calls: Array.from({ length: calls }, (_, i) => ({ to: `+49${index}${i}`, message: `order ${order} line ${i}` })),
  };
}

function failureType(error: unknown): string {
  return applicationFailureIn(error)?.type ?? (error instanceof Error ? error.name : String(error));
}

async function report(
  pool: pg.Pool,
  schema: string,
  vendor: FakeVendor,
  outcomes: string[],
  run: Omit<ChaosReport, 'keysActedOnce' | 'keysActedTwice' | 'keysSentTwice' | 'actionsRepeated' | 'vendorReplays' | 'outcomes' | 'openClaims'> & {
    killed: Set<number>;
  },
): Promise<ChaosReport> {
  const actionsByKey = new Map<string, number>();
  for (const action of vendor.actions) actionsByKey.set(action.idempotencyKey ?? 'no key', (actionsByKey.get(action.idempotencyKey ?? 'no key') ?? 0) + 1);
  const { rows } = await pool.query<{ key: string; state: string; claimed_by: string }>(
    `SELECT key, state, claimed_by FROM "${schema}".claims WHERE state <> 'completed'`,
  );
  const killedNames = new Set([...run.killed].map((pid) => `${hostname()}/${pid}`));
  const { killed: _, ...rest } = run;
  return {
    ...rest,
    keysActedOnce: [...actionsByKey.values()].filter((count) => count === 1).length,
    keysActedTwice: [...actionsByKey].filter(([, count]) => count > 1).map(([key, actions]) => ({ key, actions })),
    actionsRepeated: repeatedActions(vendor.actions),
    keysSentTwice: Object.entries(ROUTES)
      .filter(([activityType]) => !VENDOR_DEDUP_ACTIVITIES.includes(activityType))
      .flatMap(([, route]) => [...vendor.keysSentAgain(route)].map(([key, requests]) => ({ key, route, requests }))),
    vendorReplays: vendor.log.filter((request) => request.handling === 'replayed').length,
    outcomes: outcomes.reduce<Record<string, number>>((counts, outcome) => ({ ...counts, [outcome]: (counts[outcome] ?? 0) + 1 }), {}),
    openClaims: rows.map((row) => ({ key: row.key, state: row.state, claimedBy: row.claimed_by, matchesKilledAttempt: killedNames.has(row.claimed_by) })),
  };
}
