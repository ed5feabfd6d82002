/**
 * Rotating the record secret by configuration, in every order: workers take the new secret as a
 * previous one early, late or never, sign with it before or after the others, restart with a call
 * in flight, and `keys re-sign` runs early, late or twice. Whatever the order, no call is made
 * twice and no genuine record is refused for a person: a worker that lacks a row's secret refuses
 * it retryably until one that holds it answers. The README's steps, followed as written, end with
 * the old secret signing nothing, and every record answered.
 *
 * Workers here are the interceptor on a PostgresClaimStore of the worker's configuration (what a
 * worker process is to the claims), without the Temporal server: a refusal is the failure a
 * worker's attempt ends with, and a retry is the next attempt.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { ApplicationFailure } from '@temporalio/common';
import { DefaultLogger } from '@temporalio/worker';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ClaimOperations,
  IdempotencyClaimBusy,
  IdempotencyRecordRejected,
  IdempotencyRecordUnverifiable,
  PostgresClaimStore,
  migrate,
} from '../../src/index.js';
import type { PostgresClaimStoreOptions } from '../../src/index.js';
import { deriveCallKeys } from '../../src/key/index.js';
import { RecordSecret } from '../../src/store/record-signing.js';
import { IdempotentActivityEnvironment } from '../../src/testing/index.js';
import { runCli } from '../support/cli.js';
import { useTestSchema } from '../support/schema.js';

const schema = useTestSchema(import.meta.filename);
const OLD = 'rotation-test-old-record-secret-of-32-bytes-or-more';
const NEW = 'rotation-test-new-record-secret-of-32-bytes-or-more';
const OLD_ID = new RecordSecret(OLD).id;
const NEW_ID = new RecordSecret(NEW).id;
const ROTATION_CONFIG = 'test/cli/fixtures/rotation-worker-config.ts';

/** A worker's configuration at each stage of a rotation from OLD to NEW. */
const STAGES: ReadonlyArray<Omit<PostgresClaimStoreOptions, 'pool'>> = [
  { secret: OLD },
  { secret: OLD, previousSecrets: [NEW] },
  { secret: NEW, previousSecrets: [OLD] },
  { secret: NEW },
];
const RETRYABLE = new Set([IdempotencyRecordUnverifiable, IdempotencyClaimBusy]);

const schemas: string[] = [];
afterAll(async () => {
  for (const name of schemas) await schema.pool.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
});

/** A fleet of workers on one fresh schema, the vendor's count of calls per action, and every refusal. */
class Deployment {
  readonly vendorCalls = new Map<string, number>();
  readonly refusals: ApplicationFailure[] = [];
  private readonly stage: number[];
  private readonly environments: IdempotentActivityEnvironment[];
  private readonly inFlight = new Map<string, { finish: () => void; done: Promise<void> }>();
  private attemptNumber = 0;

  private constructor(
    readonly schemaName: string,
    workers: number,
  ) {
    this.stage = Array.from({ length: workers }, () => 0);
    this.environments = this.stage.map((stage) => this.environment(stage));
  }

  static async start(workers: number): Promise<Deployment> {
    const name = `t_rotation_${randomBytes(4).toString('hex')}`;
    schemas.push(name);
    await migrate(schema.pool, { schema: name });
    return new Deployment(name, workers);
  }

  /** The worker's next configuration, as its process restarts with it; `skip` passes over "new as previous". */
  advance(worker: number, skip = false): void {
    const current = this.stage[worker]!;
    if (current >= STAGES.length - 1) return;
    this.stage[worker] = current === 0 && skip ? 2 : current + 1;
    this.environments[worker] = this.environment(this.stage[worker]!);
  }

  /** An attempt of `action` on `worker`: the vendor is called only when the interceptor lets it through. */
  async call(worker: number, action: string): Promise<void> {
    await this.attempt(worker, action, async () => undefined);
  }

  /** An attempt that calls the vendor and holds on until `finishCall`, across whatever happens meanwhile. */
  startCall(worker: number, action: string): void {
    if (this.inFlight.has(action)) return;
    let finish = () => undefined as void;
    const held = new Promise<void>((resolve) => (finish = resolve));
    this.inFlight.set(action, { finish, done: this.attempt(worker, action, () => held) });
  }

  async finishCall(action: string): Promise<void> {
    const call = this.inFlight.get(action);
    if (!call) return;
    this.inFlight.delete(action);
    call.finish();
    await call.done;
  }

  async finishAll(): Promise<void> {
    for (const action of [...this.inFlight.keys()]) await this.finishCall(action);
  }

  /** `temporal-idempotency keys re-sign`, as the operator runs it with the workers' settings of stage `stage`. */
  async resign(stage = 2): Promise<{ code: number; report: Record<string, unknown> }> {
    const { secret, previousSecrets = [] } = STAGES[stage]!;
    const result = await runCli(['keys', 're-sign', '--schema', this.schemaName, '--json'], {
      TEMPORAL_IDEMPOTENCY_WORKER_CONFIG: ROTATION_CONFIG,
      TEST_NEW_SECRET: String(secret),
      TEST_OLD_SECRET: previousSecrets.length > 0 ? previousSecrets.map(String).join(',') : 'unsigned',
    });
    return { code: result.code, report: JSON.parse(result.stdout || '{}') as Record<string, unknown> };
  }

  async signers(): Promise<Record<string, number>> {
    const { rows } = await schema.pool.query<{ secret_id: string | null; rows: number }>(
      `SELECT secret_id, count(*)::integer AS rows FROM "${this.schemaName}".claims GROUP BY secret_id`,
    );
    return Object.fromEntries(rows.map((row) => [row.secret_id ?? 'unsigned', row.rows]));
  }

  get workers(): number {
    return this.stage.length;
  }

  private environment(stage: number): IdempotentActivityEnvironment {
    const store = new PostgresClaimStore({ pool: schema.pool, schema: this.schemaName, ...STAGES[stage] });
    return new IdempotentActivityEnvironment({
      store,
      maxWaitMs: 50,
      // Refusals are this test's data, not news: the failed attempts' log lines stay out.
      mockOptions: { logger: new DefaultLogger('ERROR') },
      info: { namespace: 'default', workflowExecution: { workflowId: 'wf-rotation', runId: 'run-1' } },
    });
  }

  private async attempt(worker: number, action: string, vendor: () => Promise<void>): Promise<void> {
    const charge = async (_action: string) => {
      this.vendorCalls.set(action, (this.vendorCalls.get(action) ?? 0) + 1);
      await vendor();
      return { charged: action };
    };
    const environment = this.environments[worker]!;
    try {
      const result = await environment.attempt({ activityType: 'charge', attempt: ++this.attemptNumber }).run(charge, action);
      expect(result).toEqual({ charged: action });
    } catch (error) {
      if (!(error instanceof ApplicationFailure)) throw error;
      this.refusals.push(error);
    }
  }
}

/** What the README says to do, from "every worker signs with OLD" to "OLD is gone". */
async function finishAsTheReadmeSays(deployment: Deployment): Promise<void> {
  await deployment.finishAll();
  for (let worker = 0; worker < deployment.workers; worker++) while (deploymentStage(deployment, worker) < 2) deployment.advance(worker);
  const resigned = await deployment.resign();
  expect(resigned).toMatchObject({ code: 0, report: { signed_with: NEW_ID, rejected_rows: [], unverifiable_rows: [] } });
  for (let worker = 0; worker < deployment.workers; worker++) deployment.advance(worker);
}

function deploymentStage(deployment: Deployment, worker: number): number {
  return (deployment as unknown as { stage: number[] }).stage[worker]!;
}

type Event =
  | { readonly kind: 'call'; readonly worker: number; readonly action: number }
  | { readonly kind: 'start'; readonly worker: number; readonly action: number }
  | { readonly kind: 'finish'; readonly action: number }
  | { readonly kind: 'advance'; readonly worker: number; readonly skip: boolean }
  | { readonly kind: 'resign'; readonly stage: number };

const WORKERS = 3;
const ACTIONS = 5;
const events = fc.array(
  fc.oneof(
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('call' as const), worker: fc.nat(WORKERS - 1), action: fc.nat(ACTIONS - 1) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('start' as const), worker: fc.nat(WORKERS - 1), action: fc.nat(ACTIONS - 1) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('finish' as const), action: fc.nat(ACTIONS - 1) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('advance' as const), worker: fc.nat(WORKERS - 1), skip: fc.boolean() }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('resign' as const), stage: fc.constantFrom(1, 2) }) },
  ),
  { minLength: 5, maxLength: 25 },
);

describe('rotating the record secret', () => {
  it('in any order: no call twice, no genuine record refused for a person, and the README finish leaves OLD unused', async () => {
    const seed = Number(process.env['FC_SEED'] ?? Date.now() % 2 ** 31);
    console.log(`record-secret rotation: fast-check seed ${seed} (FC_SEED=${seed} repeats it)`);
    await fc.assert(
      fc.asyncProperty(events, async (plan: Event[]) => {
        const deployment = await Deployment.start(WORKERS);
        const action = (index: number) => `order-${index}`;
        for (const event of plan) {
          if (event.kind === 'call') await deployment.call(event.worker, action(event.action));
          else if (event.kind === 'start') deployment.startCall(event.worker, action(event.action));
          else if (event.kind === 'finish') await deployment.finishCall(action(event.action));
          else if (event.kind === 'advance') deployment.advance(event.worker, event.skip);
          else expect([0, 4]).toContain((await deployment.resign(event.stage)).code);
        }
        await finishAsTheReadmeSays(deployment);
        expect(await deployment.signers()).not.toHaveProperty(OLD_ID);
        // Every action, called again on every worker, is answered from its record: the vendor counted each once.
        const refusedBefore = deployment.refusals.length;
        for (let index = 0; index < ACTIONS; index++) for (let worker = 0; worker < WORKERS; worker++) await deployment.call(worker, action(index));
        expect(deployment.refusals.slice(refusedBefore).map((refusal) => refusal.message)).toEqual([]);
        for (const [name, calls] of deployment.vendorCalls) expect(calls, name).toBe(1);
        expect(deployment.refusals.filter((refusal) => !RETRYABLE.has(refusal.type ?? '')).map((refusal) => refusal.message)).toEqual([]);
        expect(deployment.refusals.map((refusal) => refusal.type)).not.toContain(IdempotencyRecordRejected);
      }),
      { seed, numRuns: Number(process.env["FC_RUNS"] ?? 15) },
    );
  }, 240_000);

  it('the README steps, word for word: add the new secret as previous, sign with it, re-sign, drop the old one', async () => {
    const deployment = await Deployment.start(2);
    for (const order of ['a', 'b']) await deployment.call(0, order);
    deployment.startCall(1, 'slow');
    // 1. Every worker gets NEW in previousSecrets, then 2. every worker signs with NEW (OLD in previousSecrets).
    for (const worker of [0, 1]) deployment.advance(worker);
    for (const worker of [0, 1]) deployment.advance(worker);
    await deployment.finishCall('slow');
    await deployment.call(1, 'c');
    // The slow call was made by a worker still signing with OLD, and recorded by it.
    expect(await deployment.signers()).toEqual({ [OLD_ID]: 3, [NEW_ID]: 1 });
    // 3. keys re-sign with the workers' settings; keys status shows OLD signs nothing.
    const resigned = await deployment.resign();
    expect(resigned).toMatchObject({ code: 0, report: { signed_with: NEW_ID, resigned_rows: 3, rejected_rows: [], unverifiable_rows: [], distrusted_rows: [] } });
    const status = await runCli(['keys', 'status', '--schema', deployment.schemaName, '--json'], {
      TEMPORAL_IDEMPOTENCY_WORKER_CONFIG: ROTATION_CONFIG,
      TEST_NEW_SECRET: NEW,
      TEST_OLD_SECRET: OLD,
    });
    expect(JSON.parse(status.stdout)).toEqual([{ secret: NEW_ID, rows: 4, held_as: 'signing' }]);
    // 4. OLD leaves every worker's settings: each record is answered, none called again.
    for (const worker of [0, 1]) deployment.advance(worker);
    for (const order of ['a', 'b', 'slow', 'c']) for (const worker of [0, 1]) await deployment.call(worker, order);
    expect(deployment.refusals).toEqual([]);
    expect(Object.fromEntries(deployment.vendorCalls)).toEqual({ a: 1, b: 1, slow: 1, c: 1 });
  });
});

describe('a leaked record secret', () => {
  it('loses its authority once dropped: a receipt planted with it is refused, and re-sign --distrust leaves it for a person', async () => {
    const deployment = await Deployment.start(1);
    await deployment.call(0, 'genuine');
    // Whoever holds the leaked OLD (and can write the table) records a receipt for a charge not made yet.
    const attacker = new PostgresClaimStore({ pool: schema.pool, schema: deployment.schemaName, secret: OLD });
    await new IdempotentActivityEnvironment({ store: attacker, info: { namespace: 'default', workflowExecution: { workflowId: 'wf-rotation', runId: 'run-1' } } })
      .attempt({ activityType: 'charge' })
      .run(async (_action: string) => ({ charged: 'FORGED' }), 'planted');
    // The leak is found: every worker signs with NEW and drops OLD at once; the CLI re-signs, OLD distrusted.
    deployment.advance(0, true);
    deployment.advance(0);
    const cli = (...args: string[]) =>
      runCli([...args, '--schema', deployment.schemaName, '--reason', 'OLD leaked', '--no-signal'], {
        TEMPORAL_IDEMPOTENCY_WORKER_CONFIG: ROTATION_CONFIG,
        TEST_NEW_SECRET: NEW,
        TEST_OLD_SECRET: OLD,
      });
    const salt = await new ClaimOperations(schema.pool, { schema: deployment.schemaName }).keySalt();
    const keyOf = (action: string) =>
      deriveCallKeys({ namespace: 'default', scopeMaterial: { scope: 'workflow', workflowId: 'wf-rotation' }, activityType: 'charge', semanticArgs: [action] }, salt).key;
    const resigned = await cli('keys', 're-sign', '--distrust', OLD_ID, '--json');
    expect(resigned.code).toBe(4);
    expect(JSON.parse(resigned.stdout)).toMatchObject({ resigned_rows: 0, distrusted_rows: expect.arrayContaining([keyOf('genuine'), keyOf('planted')]) });
    // Neither record is obeyed: nothing is answered from the planted receipt, nothing is called again.
    await deployment.call(0, 'planted');
    await deployment.call(0, 'genuine');
    expect(deployment.refusals.map((refusal) => refusal.type)).toEqual([IdempotencyRecordUnverifiable, IdempotencyRecordUnverifiable]);
    expect(Object.fromEntries(deployment.vendorCalls)).toEqual({ genuine: 1 });
    // A person checks the vendor (the CLI holding what the workers hold: NEW alone): the genuine charge went out, the
    // planted one never did. The CLI cannot check either record: each change names the leaked secret, with --force.
    const operator = (...args: string[]) =>
      runCli([...args, '--schema', deployment.schemaName, '--reason', 'OLD leaked; checked the vendor', '--no-signal'], {
        TEMPORAL_IDEMPOTENCY_SECRET: NEW,
      });
    const released = await operator('release', keyOf('planted'), '--force');
    expect(released).toMatchObject({ code: 4, stderr: expect.stringMatching(/which the CLI cannot check: refusing to touch it.*--distrust/) });
    expect((await operator('release', keyOf('planted'), '--force', '--distrust', OLD_ID)).code).toBe(0);
    expect((await operator('resolve', keyOf('genuine'), '--result', '{"charged":"genuine"}', '--force', '--distrust', OLD_ID)).code).toBe(0);
    await deployment.call(0, 'planted');
    await deployment.call(0, 'genuine');
    expect(deployment.refusals).toHaveLength(2);
    expect(Object.fromEntries(deployment.vendorCalls)).toEqual({ genuine: 1, planted: 1 });
  });

  it('a --distrust that names no secret is refused before anything is signed; upper case and spaces are the same id', async () => {
    const deployment = await Deployment.start(1);
    const attacker = new PostgresClaimStore({ pool: schema.pool, schema: deployment.schemaName, secret: OLD });
    await new IdempotentActivityEnvironment({ store: attacker, info: { namespace: 'default', workflowExecution: { workflowId: 'wf-rotation', runId: 'run-1' } } })
      .attempt({ activityType: 'charge' })
      .run(async (_action: string) => ({ charged: 'FORGED' }), 'planted');
    const resign = (...flags: string[]) =>
      runCli(['keys', 're-sign', ...flags, '--schema', deployment.schemaName, '--json'], {
        TEMPORAL_IDEMPOTENCY_WORKER_CONFIG: ROTATION_CONFIG,
        TEST_NEW_SECRET: NEW,
        TEST_OLD_SECRET: OLD,
      });
    // Found in review: each of these distrusted nothing, and the planted receipt was signed anew with NEW.
    for (const typo of [`${OLD_ID},`, `${OLD_ID},deadbeef`, 'deadbeef', OLD_ID.slice(1)]) {
      const refused = await resign('--distrust', typo);
      expect({ typo, code: refused.code }).toEqual({ typo, code: 2 });
      expect(refused.stderr).toMatch(/not a secret id|no row here is signed by it/);
    }
    expect(await deployment.signers()).toEqual({ [OLD_ID]: 1 });
    const library = new ClaimOperations(schema.pool, { schema: deployment.schemaName, secret: NEW, previousSecrets: [OLD] });
    await expect(library.resign({ distrust: OLD_ID as unknown as string[] })).rejects.toThrow(/expected an array of secret ids/);
    expect(await deployment.signers()).toEqual({ [OLD_ID]: 1 });
    // Printed another way, the same id: distrusted, left and listed.
    const distrusted = await resign('--distrust', ` ${OLD_ID.toUpperCase()}`);
    expect(distrusted.code).toBe(4);
    expect(JSON.parse(distrusted.stdout)).toMatchObject({ resigned_rows: 0, distrusted_rows: [expect.stringMatching(/^[0-9a-f]{64}$/)] });
  });
});
