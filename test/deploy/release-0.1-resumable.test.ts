/**
 * Workflows that 0.1's `resumable()` left waiting for an operator, when this release is deployed.
 *
 * A 0.1 worker (0.1's workflow code, bundled from test/deploy/fixtures/workflows-0.1.ts, and 0.1's
 * activity interceptor on a schema 0.1 migrated) runs the workflow until a call is refused and the
 * workflow waits. The deploy: that worker stops, this release's migrate() runs, and a worker of this
 * release takes the same task queue. The operator then resolves or releases the key with this
 * release's CLI, which signals the workflow; the new worker replays the 0.1 history and goes on.
 *
 * The activity side after the deploy is this release's interceptor too: a deploy replaces 0.1's
 * workers whole (one Worker hosts both workflow and activity code), and once the schema is migrated
 * 0.1's interceptor may not claim there any more (release-0.1.test.ts). The refusal itself was made
 * by 0.1's interceptor, so the record the operator decides is one 0.1 wrote.
 *
 * `resumable()` of this release reads decisions by key, counting those that arrived after the
 * refused call was made; 0.1 counted any decision on the key it had not used yet. Behind
 * patched('temporal-idempotency/resumable-decides-by-key'), a history without that marker keeps
 * 0.1's reading, and keeps working without the workflow interceptors (0.1 needed none). Which case
 * needs which part of that guard:
 * - `resolve` and `release`: neither. With one decision, arriving after the refusal, both readings
 *   make the same commands. They pin the deploy itself: the key carried to 0.1's record, this
 *   release's CLI and interceptor on it, the signal handler the workflow interceptors install.
 * - a decision that arrived before the refusal (0.1 then called again at once): 0.1's reading on
 *   replay. Read by key instead, the replay is nondeterministic.
 * - a worker without the workflow interceptors: resumable() installing the handlers for a history
 *   without the marker, where a new workflow would fail its task with IdempotencyConfigError.
 * The replays check both guards against histories alone, and show the first one is load-bearing.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import type { WorkflowHandle } from '@temporalio/client';
import { DefaultLogger, Worker, bundleWorkflowCode } from '@temporalio/worker';
import type { WorkflowBundle } from '@temporalio/worker';
import type { temporal as proto } from '@temporalio/proto';
import { PostgresClaimStore, idempotencyInterceptors, migrate } from '../../src/index.js';
import { OPERATOR_DECISION_SIGNAL } from '../../src/operator-decision.js';
import { workflowInterceptorModules } from '../../dev/workflow-interceptors.js';
import * as release01 from './fixtures/release-0.1.js';
import { deriveKey as deriveKey01 } from './fixtures/release-0.1/src/key/index.js';
import { runCli } from '../support/cli.js';
import { waitingOn } from '../support/pending-refusal.js';
import { activityFailures, uniqueName, useTemporal, workflowTaskFailures } from '../support/temporal.js';

const temporal = useTemporal();
const pool = new pg.Pool({ connectionString: inject('databaseUrl'), max: 10 });
pool.on('error', () => undefined);
const schemas: string[] = [];
const stores: PostgresClaimStore[] = [];
let failed = false;
beforeEach(({ onTestFailed }) => onTestFailed(() => void (failed = true)));
afterAll(async () => {
  await Promise.all(stores.map((store) => store.close()));
  if (failed) console.log(`Kept schemas ${schemas.join(', ')} for inspection (a test failed).`);
  else for (const name of schemas) await pool.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
  await pool.end();
});

const WORKFLOWS = fileURLToPath(new URL('../support/workflows.ts', import.meta.url));
const bundles = {} as Record<'release01' | 'withoutInterceptors', WorkflowBundle>;
beforeAll(async () => {
  const logger = new DefaultLogger('WARN');
  // One at a time: webpack on two shared cores gains nothing from running both at once.
  bundles.release01 = await bundleWorkflowCode({ workflowsPath: fileURLToPath(new URL('./fixtures/workflows-0.1.ts', import.meta.url)), logger });
  // This release's workflow code on a worker registered as 0.1 needed: the activity interceptor only.
  bundles.withoutInterceptors = await bundleWorkflowCode({ workflowsPath: WORKFLOWS, logger });
}, 180_000);

const RELEASE_01_WORKER = 'release-0.1-worker';
const UPGRADED_WORKER = 'upgraded-worker';

/** Every call that reached placeCall, as its number. The first call to a number loses the vendor's answer. */
const calls: string[] = [];
const activities = {
  placeCall: async (to: string) => {
    calls.push(to);
    if (callsTo(to) === 1) throw new release01.OutcomeUnknownError(`the line to ${to} dropped before the vendor answered`);
    return { id: `call_${to}`, status: 'done' };
  },
};
const callsTo = (to: string) => calls.filter((called) => called === to).length;

/** A workflow a 0.1 worker left waiting in resumable(), on a schema 0.1 migrated. */
interface Waiting {
  readonly handle: WorkflowHandle;
  readonly taskQueue: string;
  readonly schema: string;
  readonly to: string;
  /** The refused call's key, as the workflow's pending query reports it. */
  readonly key: string;
  /** Its history when the 0.1 worker stopped. */
  readonly history: proto.api.history.v1.IHistory;
}

/**
 * Runs resumableCallActivity (placeCall, workflow scope) on a 0.1 worker until it waits for an operator,
 * then stops that worker. With `decisionFirst`, the workflow starts with a decision on the key already
 * delivered (signal-with-start): one that reached it before the call it names was refused.
 */
async function waitingUnder01(options: { decisionFirst?: boolean } = {}): Promise<Waiting> {
  const schema = `t_rel01_resumable_${randomBytes(3).toString('hex')}`;
  schemas.push(schema);
  expect(await release01.migrate(pool, { schema })).toMatchObject({ applied: [1, 2, 3] });
  const store = new release01.PostgresClaimStore({ pool, schema });
  const [taskQueue, workflowId, to] = [uniqueName('tq'), uniqueName('wf'), uniqueName('+49')];
  const args = [{ activity: 'placeCall', args: [to] }];
  const worker = await Worker.create({
    connection: temporal.nativeConnection,
    taskQueue,
    identity: RELEASE_01_WORKER,
    workflowBundle: bundles.release01,
    activities,
    interceptors: { activity: release01.idempotencyInterceptors({ store, audit: true }) },
  });
  // The key 0.1's interceptor derives for this call (workflow scope), known before the call is made.
  const expectedKey = deriveKey01({ namespace: 'default', scopeMaterial: { scope: 'workflow', workflowId }, activityType: 'placeCall', semanticArgs: [to] });
  const { handle, key } = await worker.runUntil(async () => {
    const handle = options.decisionFirst
      ? await temporal.client.workflow.signalWithStart('resumableCallActivity', {
          taskQueue,
          workflowId,
          args,
          signal: OPERATOR_DECISION_SIGNAL,
          signalArgs: [{ key: expectedKey, decision: 'released' }],
        })
      : await temporal.client.workflow.start('resumableCallActivity', { taskQueue, workflowId, args });
    return { handle, key: (await waitingOn(handle)).key };
  });
  // With `decisionFirst`: the early decision named the very call that was then refused.
  expect(key).toBe(expectedKey);
  return { handle, taskQueue, schema, to, key, history: await handle.fetchHistory() };
}

/**
 * The deploy and the operator: this release's migrate(), a worker of this release on the task queue
 * (with this release's workflow interceptors unless `bundle` says otherwise), and `decision` from the
 * CLI. Returns the workflow's result.
 */
async function deployAndDecide(
  waiting: Waiting,
  decision: 'resolve' | 'release',
  bundle: WorkflowBundle = temporal.workflowBundle,
): Promise<unknown> {
  await migrate(pool, { schema: waiting.schema });
  const store = new PostgresClaimStore({ pool, schema: waiting.schema });
  stores.push(store);
  const worker = await Worker.create({
    connection: temporal.nativeConnection,
    taskQueue: waiting.taskQueue,
    identity: UPGRADED_WORKER,
    workflowBundle: bundle,
    activities,
    interceptors: { activity: idempotencyInterceptors({ store }) },
  });
  return worker.runUntil(async () => {
    const args = decision === 'resolve' ? ['resolve', waiting.key, '--result', '{"id":"call_by_hand","status":"done"}'] : ['release', waiting.key];
    const decided = await runCli([...args, '--schema', waiting.schema], { TEMPORAL_ADDRESS: inject('temporalAddress') });
    expect({ code: decided.code, stderr: decided.stderr }).toEqual({
      code: 0,
      stderr: expect.stringContaining(`Signalled workflow ${waiting.handle.workflowId}: ${decision}d.`),
    });
    return resultUnlessTaskFails(waiting.handle);
  });
}

/** The workflow's result; rejects at the first workflow task failure in its history (a nondeterminism, say), with its message. */
async function resultUnlessTaskFails(handle: WorkflowHandle): Promise<unknown> {
  const result = handle.result();
  void result.catch(() => undefined);
  for (;;) {
    const settled = await Promise.race([result.then(() => true, () => true), sleep(250).then(() => false)]);
    const failures = await taskFailures(handle);
    if (failures.length > 0) throw new Error(`a workflow task failed: ${failures.join('\n')}`);
    if (settled) return result;
  }
}

/** Each workflow task failure in the history, as `cause: message`. */
async function taskFailures(handle: WorkflowHandle): Promise<string[]> {
  return (await workflowTaskFailures(handle)).map((failed) => `${String(failed.cause)}: ${failed.failure?.message ?? ''}`);
}

/** Which worker completed each workflow task, in order, one entry per run of the same worker. */
async function completedBy(handle: WorkflowHandle): Promise<string[]> {
  const { events } = await handle.fetchHistory();
  const identities = (events ?? []).flatMap((event) => event.workflowTaskCompletedEventAttributes?.identity ?? []);
  return identities.filter((identity, i) => identity !== identities[i - 1]);
}

async function refusals(handle: WorkflowHandle): Promise<number> {
  return (await activityFailures(handle)).filter((failure) => failure.applicationFailureInfo?.type === 'IdempotencyOrphanedClaim').length;
}

async function claimStates(schema: string): Promise<Array<{ key: string; state: string }>> {
  const { rows } = await pool.query<{ key: string; state: string }>(`SELECT key, state FROM "${schema}".claims ORDER BY claimed_at`);
  return rows;
}

describe('a workflow 0.1 left waiting in resumable(), after a deploy of this release', () => {
  it('`resolve`: the new worker replays 0.1\'s history without a failed workflow task and returns the recorded result; placeCall is not called again', async () => {
    const waiting = await waitingUnder01();
    expect(callsTo(waiting.to)).toBe(1);
    expect(await claimStates(waiting.schema)).toEqual([{ key: waiting.key, state: 'unknown' }]);

    expect(await deployAndDecide(waiting, 'resolve')).toEqual([{ id: 'call_by_hand', status: 'done' }]);
    expect(callsTo(waiting.to)).toBe(1);
    expect(await taskFailures(waiting.handle)).toEqual([]);
    expect(await completedBy(waiting.handle)).toEqual([RELEASE_01_WORKER, UPGRADED_WORKER]);
    expect(await claimStates(waiting.schema)).toEqual([{ key: waiting.key, state: 'completed' }]);
  });

  it('`release`: the new worker replays 0.1\'s history without a failed workflow task and runs placeCall for real, once', async () => {
    const waiting = await waitingUnder01();
    expect(callsTo(waiting.to)).toBe(1);

    expect(await deployAndDecide(waiting, 'release')).toEqual([{ id: `call_${waiting.to}`, status: 'done' }]);
    expect(callsTo(waiting.to)).toBe(2); // 0.1's call, whose answer was lost, and the one after the release
    expect(await taskFailures(waiting.handle)).toEqual([]);
    expect(await completedBy(waiting.handle)).toEqual([RELEASE_01_WORKER, UPGRADED_WORKER]);
    expect(await claimStates(waiting.schema)).toEqual([{ key: waiting.key, state: 'completed' }]);
  });

  it('a decision that arrived before the refusal: 0.1 called again at once and was refused again; the new worker replays that, then `resolve` finishes it', async () => {
    const waiting = await waitingUnder01({ decisionFirst: true });
    // 0.1 took the early decision for the refusal's answer: a second call, refused too, before it waited.
    expect(await refusals(waiting.handle)).toBe(2);
    expect(callsTo(waiting.to)).toBe(1);

    expect(await deployAndDecide(waiting, 'resolve')).toEqual([{ id: 'call_by_hand', status: 'done' }]);
    expect(callsTo(waiting.to)).toBe(1);
    expect(await taskFailures(waiting.handle)).toEqual([]);
    expect(await completedBy(waiting.handle)).toEqual([RELEASE_01_WORKER, UPGRADED_WORKER]);
  });

  it('taken over by a worker of this release without the workflow interceptors (registered as for 0.1): it still hears `resolve` and finishes; placeCall is not called again', async () => {
    const waiting = await waitingUnder01();

    expect(await deployAndDecide(waiting, 'resolve', bundles.withoutInterceptors)).toEqual([{ id: 'call_by_hand', status: 'done' }]);
    expect(callsTo(waiting.to)).toBe(1);
    expect(await taskFailures(waiting.handle)).toEqual([]);
    expect(await completedBy(waiting.handle)).toEqual([RELEASE_01_WORKER, UPGRADED_WORKER]);
  });
});

/**
 * This release's test workflows and interceptors, with the patch's branch taken whatever the history
 * says: the guard left out (test/deploy/fixtures/decides-by-key-forced-loader.cjs).
 */
async function decidesByKeyForced(): Promise<WorkflowBundle> {
  const loader = fileURLToPath(new URL('./fixtures/decides-by-key-forced-loader.cjs', import.meta.url));
  return bundleWorkflowCode({
    workflowsPath: WORKFLOWS,
    workflowInterceptorModules,
    logger: new DefaultLogger('WARN'),
    webpackConfigHook: (config) => ({
      ...config,
      module: { ...config.module, rules: [...(config.module?.rules ?? []), { test: /src[\\/]workflow[\\/]resumable\.ts$/, enforce: 'pre', use: [loader] }] },
    }),
  });
}

describe('histories 0.1 wrote, replayed (Worker.runReplayHistory)', () => {
  it('replay against this release\'s bundle, as 0.1 left them and as the new worker finished them; against one that reads decisions by key whatever the history says, the one with an early decision does not', async () => {
    const plain = await waitingUnder01();
    const decisionFirst = await waitingUnder01({ decisionFirst: true });
    expect(await refusals(decisionFirst.handle)).toBe(2);
    for (const waiting of [plain, decisionFirst]) expect(await deployAndDecide(waiting, 'resolve')).toEqual([{ id: 'call_by_hand', status: 'done' }]);
    const finished = { plain: await plain.handle.fetchHistory(), decisionFirst: await decisionFirst.handle.fetchHistory() };

    for (const history of [plain.history, decisionFirst.history, finished.plain, finished.decisionFirst]) {
      await Worker.runReplayHistory({ workflowBundle: temporal.workflowBundle }, history);
    }
    // A worker of this release registered as for 0.1 (no workflow interceptors) replays what 0.1 wrote too.
    for (const history of [plain.history, decisionFirst.history]) {
      await Worker.runReplayHistory({ workflowBundle: bundles.withoutInterceptors }, history);
    }

    const forced = { workflowBundle: await decidesByKeyForced() };
    // The control: one decision, arriving after the refusal, makes the same commands under either reading,
    // so the forced bundle replays that whole history. Its failure below is the reading, not a broken bundle.
    await Worker.runReplayHistory(forced, finished.plain);
    await expect(Worker.runReplayHistory(forced, decisionFirst.history)).rejects.toMatchObject({
      name: 'DeterminismViolationError',
      message: expect.stringContaining('No command scheduled for event'),
    });
  });
});
