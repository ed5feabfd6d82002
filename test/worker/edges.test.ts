/**
 * The edges where a write could run twice, an action could be lost, or an
 * attempt could end with the wrong failure: each found by a review that tried
 * to break the interceptor, each on a real Temporal server and real Postgres.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { Context } from '@temporalio/activity';
import { defaultPayloadConverter } from '@temporalio/common';
import type { ActivityFunction } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import type { WorkflowHandle } from '@temporalio/client';
import {
  IdempotencyConfiguration,
  IdempotencyOrphanedClaim,
  IdempotencyResultUndecodable,
  NotSentError,
  OutcomeUnknownError,
  idempotencyInterceptors,
} from '../../src/index.js';
import type { ClaimStore, IdempotencyOptions, RefusalDetails } from '../../src/index.js';
import { CHARGE_ROUTE, CALL_ROUTE, createActivities } from '../../activities/index.js';
import type { CallRequest } from '../../activities/index.js';
import { useVendor } from '../support/example-workers.js';
import { useTestSchema } from '../support/schema.js';
import { pendingActivityFailure, uniqueName, useTemporal } from '../support/temporal.js';
import { activityFailureOf } from '../support/failures.js';
import { XorCodec } from '../support/codecs.js';
import { logsMatching } from '../support/logs.js';
import type { CallActivityInput } from '../support/workflows.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const vendor = useVendor();

type Options = Omit<IdempotencyOptions, 'store'> & { store?: ClaimStore };

function interceptors(options: Options = {}) {
  return { activity: idempotencyInterceptors({ store: schema.store, ...options }) };
}

/** Runs `callActivity` on a fresh task queue with an intercepted in-process worker; returns its result or throws. */
async function run(activities: Record<string, ActivityFunction>, input: CallActivityInput, options: Options = {}) {
  const taskQueue = uniqueName('tq');
  return temporal.withWorker({ taskQueue, activities, interceptors: interceptors(options) }, () =>
    temporal.client.workflow.execute('callActivity', { taskQueue, workflowId: uniqueName('wf'), args: [input] }),
  );
}

async function claimRows(workflowId: string): Promise<Array<{ state: string; outcome_note: string | null }>> {
  const { rows } = await schema.pool.query(`SELECT state, outcome_note FROM "${schema.name}".claims WHERE workflow_id = $1`, [
    workflowId,
  ]);
  return rows;
}

function callsTo(call: CallRequest) {
  return vendor.actionsOn(CALL_ROUTE).filter((action) => (action.body as CallRequest).to === call.to);
}

describe('an error while the answer arrives is not "nothing happened"', () => {
  it('refuses a plain fetch whose response body times out, by default: the vendor placed the call once', async () => {
    const call: CallRequest = { to: uniqueName('+49'), message: 'hello' };
    vendor.script(CALL_ROUTE, 'stall-body');
    let bodies = 0;
    const activities = {
      // Written as many activities are: no classification of its own.
      placeCall: async (request: CallRequest) => {
        bodies++;
        const response = await fetch(new URL('/v1/calls', vendor.url), {
          method: 'POST',
          body: JSON.stringify(request),
          signal: AbortSignal.timeout(500),
        });
        return response.json();
      },
    };
    const failure = await activityFailureOf(run(activities, { activity: 'placeCall', args: [call] }));
    expect(failure.type).toBe(IdempotencyOrphanedClaim);
    expect(failure.message).toMatch(/may have reached the vendor \(TimeoutError\)/);
    expect(bodies).toBe(1);
    expect(callsTo(call)).toHaveLength(1);
  });

  it('refuses the example activity when the receipt stalls mid-body: one call placed', async () => {
    const call: CallRequest = { to: uniqueName('+49'), message: 'hello' };
    vendor.script(CALL_ROUTE, 'stall-body');
    const activities = createActivities({ vendorUrl: vendor.url, requestTimeoutMs: 500 });
    const failure = await activityFailureOf(run(activities, { activity: 'placeCall', args: [call] }));
    expect(failure.type).toBe(IdempotencyOrphanedClaim);
    expect(callsTo(call)).toHaveLength(1);
  });
});

describe('the activity\'s own word about its outcome', () => {
  it('recognises an OutcomeUnknownError from another copy of the library by its brand', async () => {
    let bodies = 0;
    const activities = {
      send: async () => {
        bodies++;
        // What `instanceof` cannot see: the class of a second copy of temporal-idempotency.
        const foreign = new Error('line dropped mid-call');
        foreign.name = 'OutcomeUnknownError';
        Object.defineProperty(foreign, Symbol.for('temporal-idempotency.OutcomeUnknownError'), { value: true });
        throw foreign;
      },
    };
    const failure = await activityFailureOf(run(activities, { activity: 'send', args: ['x'], maximumAttempts: 3 }));
    expect(failure.type).toBe(IdempotencyOrphanedClaim);
    expect(bodies).toBe(1);
  });

  it('counts an isAmbiguous that throws as ambiguous, and says so in the refusal', async () => {
    let bodies = 0;
    const activities = { send: async () => (bodies++, Promise.reject(new Error('vendor timeout'))) };
    const isAmbiguous = () => {
      throw new TypeError('cannot read properties of undefined');
    };
    const failure = await activityFailureOf(run(activities, { activity: 'send', args: ['y'] }, { activities: { send: { isAmbiguous } } }));
    expect(failure.type).toBe(IdempotencyOrphanedClaim);
    expect((failure.details?.[0] as RefusalDetails).reason).toBe('outcome-unknown');
    expect(failure.message).toMatch(/isAmbiguous threw TypeError while classifying the activity's Error/);
    expect((failure.details?.[0] as RefusalDetails).outcomeDetail).toMatch(/isAmbiguous threw TypeError: cannot read properties of undefined/);
    expect(bodies).toBe(1);
  });

  it('lets NotSentError win over a cancellation: a shutdown before sending releases the claim, and the retry calls once', async () => {
    const taskQueue = uniqueName('tq');
    const workflowId = uniqueName('wf');
    let started = 0;
    let sent = 0;
    const activities = {
      send: async () => {
        if (++started === 1) {
          await new Promise((resolve) => Context.current().cancellationSignal.addEventListener('abort', resolve));
          throw new NotSentError('shutting down; the request was never sent');
        }
        return ++sent;
      },
    };
    const first = await Worker.create({
      connection: temporal.nativeConnection,
      taskQueue,
      workflowBundle: temporal.workflowBundle,
      activities,
      interceptors: interceptors(),
      shutdownGraceTime: '200ms',
    });
    const running = first.run();
    const handle = await temporal.client.workflow.start('callActivity', {
      taskQueue,
      workflowId,
      args: [{ activity: 'send', args: [], startToCloseTimeoutMs: 3_000 }],
    });
    await until(() => started === 1);
    first.shutdown();
    await running;
    expect(await claimRows(workflowId)).toEqual([]);
    const result = await temporal.withWorker({ taskQueue, activities, interceptors: interceptors() }, () => handle.result());
    expect(result).toEqual([1]);
    expect(sent).toBe(1);
  });
});

describe('cancellation while the claim is being taken', () => {
  it('releases the claim and never starts the body', async () => {
    const taskQueue = uniqueName('tq');
    const workflowId = uniqueName('wf');
    let beginsStarted = 0;
    let bodies = 0;
    // A slow claim: it completes only after the worker started shutting down and cancelled the attempt.
    const slowBegin: ClaimStore = Object.assign(Object.create(schema.store) as ClaimStore, {
      begin: async (...args: Parameters<ClaimStore['begin']>) => {
        beginsStarted++;
        const signal = Context.current().cancellationSignal;
        await new Promise((resolve) => (signal.aborted ? resolve(undefined) : signal.addEventListener('abort', resolve)));
        return schema.store.begin(...args);
      },
    });
    const worker = await Worker.create({
      connection: temporal.nativeConnection,
      taskQueue,
      workflowBundle: temporal.workflowBundle,
      activities: { send: async () => ++bodies },
      interceptors: interceptors({ store: slowBegin }),
      shutdownGraceTime: '200ms',
    });
    const running = worker.run();
    const handle = await temporal.client.workflow.start('callActivity', {
      taskQueue,
      workflowId,
      args: [{ activity: 'send', args: [] }],
    });
    await until(() => beginsStarted === 1);
    worker.shutdown();
    await running;
    expect(bodies).toBe(0);
    expect(await claimRows(workflowId)).toEqual([]);
    await handle.terminate();
  });
});

describe('configuration mistakes', () => {
  it('refuses an interceptor registered twice, non-retryably, before the body runs', async () => {
    let bodies = 0;
    const options = { store: schema.store, maxWaitMs: 1_000 };
    const taskQueue = uniqueName('tq');
    const failure = await activityFailureOf(
      temporal.withWorker(
        {
          taskQueue,
          activities: { send: async () => ++bodies },
          interceptors: { activity: [...idempotencyInterceptors(options), ...idempotencyInterceptors(options)] },
        },
        () => temporal.client.workflow.execute('callActivity', { taskQueue, workflowId: uniqueName('wf'), args: [{ activity: 'send', args: [] }] }),
      ),
    );
    expect(failure.type).toBe(IdempotencyConfiguration);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toMatch(/registered twice/);
    expect(bodies).toBe(0);
  });

  it('refuses call scope for a local activity, whose long-backoff retries get new activity ids', async () => {
    let bodies = 0;
    const failure = await activityFailureOf(
      run({ send: async () => ++bodies }, { activity: 'send', args: [], local: true }, { activities: { send: { scope: 'call' } } }),
    );
    expect(failure.type).toBe(IdempotencyConfiguration);
    expect(failure.message).toMatch(/'call' scope cannot key the local activity send/);
    expect(bodies).toBe(0);
  });

  it('warns once, naming the near miss, when a misspelled activity name leaves an activity on the defaults', async () => {
    await run({ chargeCard: async () => 'ok' }, { activity: 'chargeCard', args: ['z'] }, { activities: { chargeCrad: { vendorDedup: true } } });
    const warnings = logsMatching(/activities\.chargeCrad names no activity/);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.message).toMatch(/activity chargeCard has no settings/);
  });

  it('warns when a cron workflow keys an activity on workflow scope, which merges its runs', async () => {
    const taskQueue = uniqueName('tq');
    await temporal.withWorker({ taskQueue, activities: { remind: async () => 'sent' }, interceptors: interceptors() }, async () => {
      const handle = await temporal.client.workflow.start('callActivity', {
        taskQueue,
        workflowId: uniqueName('cron'),
        cronSchedule: '@every 1s',
        args: [{ activity: 'remind', args: [] }],
      });
      try {
        await until(() => logsMatching(/cron workflow callActivity/).length > 0, 15_000);
      } finally {
        await handle.terminate();
      }
    });
    expect(logsMatching(/cron workflow callActivity/)[0]!.message).toMatch(/workflow scope.*every run/);
  });
});

describe('records a worker cannot read', () => {
  it('fails retryably, naming the encoding, until a worker with the codec answers from the record', async () => {
    let bodies = 0;
    const activities = { fetchSecret: async () => (bodies++, { card: '4242' }) };
    const taskQueue = uniqueName('tq');
    const workflowId = uniqueName('wf');
    const input = { activity: 'fetchSecret', args: [], times: 1 };
    const withCodec = interceptors({ payloadCodecs: [new XorCodec()] });
    await temporal.withWorker({ taskQueue, activities, interceptors: withCodec }, () =>
      temporal.client.workflow.execute('callActivity', { taskQueue, workflowId, args: [input] }),
    );
    // Same workflow id (workflow scope): the same key, recorded with a codec this worker lacks.
    const handle = await temporal.client.workflow.start('callActivity', { taskQueue, workflowId, args: [input] });
    const failure = await temporal.withWorker({ taskQueue, activities, interceptors: interceptors() }, () =>
      pendingActivityFailure(handle, (candidate) => candidate.type != null),
    );
    expect(failure.type).toBe(IdempotencyResultUndecodable);
    expect(failure.nonRetryable).toBeFalsy();
    const result = await temporal.withWorker({ taskQueue, activities, interceptors: withCodec }, () => handle.result());
    expect(result).toEqual([{ card: '4242' }]);
    expect(bodies).toBe(1);
  });
});

describe('text Postgres cannot store', () => {
  it('keeps the outcome unknown when the error message holds U+0000, and the ledger has its entry', async () => {
    const taskQueue = uniqueName('tq');
    const workflowId = uniqueName('wf');
    const activities = { send: async () => Promise.reject(new OutcomeUnknownError('line\u0000dropped')) };
    await temporal
      .withWorker({ taskQueue, activities, interceptors: interceptors({ audit: true, recordRetryMs: 2_000 }) }, () =>
        temporal.client.workflow.execute('callActivity', { taskQueue, workflowId, args: [{ activity: 'send', args: [] }] }),
      )
      .catch(() => undefined);
    const { rows: claims } = await schema.pool.query<{ state: string; outcome_detail: { data: string } }>(
      `SELECT state, outcome_detail FROM "${schema.name}".claims WHERE workflow_id = $1`,
      [workflowId],
    );
    expect(claims.map((claim) => claim.state)).toEqual(['unknown']);
    expect(Buffer.from(claims[0]!.outcome_detail.data, 'base64').toString()).toContain('line\\u0000dropped');
    const { rows } = await schema.pool.query(`SELECT outcome, error_class FROM "${schema.name}".ledger_calls WHERE workflow_id = $1`, [
      workflowId,
    ]);
    expect(rows).toEqual([{ outcome: 'outcome-unknown', error_class: 'OutcomeUnknownError' }]);
  });
});

describe('the ledger and the claim tell one story', () => {
  it('records an isAmbiguous match as outcome-unknown in the ledger, as the claim does', async () => {
    const taskQueue = uniqueName('tq');
    const workflowId = uniqueName('wf');
    const activities = { send: async () => Promise.reject(new Error('504 from the gateway')) };
    const options: Options = { audit: true, activities: { send: { isAmbiguous: (error) => String(error).includes('504') } } };
    await temporal
      .withWorker({ taskQueue, activities, interceptors: interceptors(options) }, () =>
        temporal.client.workflow.execute('callActivity', { taskQueue, workflowId, args: [{ activity: 'send', args: [] }] }),
      )
      .catch(() => undefined);
    expect((await claimRows(workflowId))[0]?.state).toBe('unknown');
    const { rows } = await schema.pool.query(`SELECT outcome FROM "${schema.name}".ledger_calls WHERE workflow_id = $1`, [workflowId]);
    expect(rows).toEqual([{ outcome: 'outcome-unknown' }]);
  });
});

describe('vendorDedup', () => {
  it('retries an ambiguous error with the same key: the vendor answers the repeat, one charge', async () => {
    const example = createActivities({ vendorUrl: vendor.url });
    const order = { orderId: uniqueName('order'), customerId: 'c', amountCents: 990, currency: 'EUR' };
    let attempts = 0;
    const activities = {
      chargeCard: async (charge: typeof order) => {
        const receipt = await example.chargeCard(charge);
        if (++attempts === 1) throw new OutcomeUnknownError('the connection dropped before the receipt arrived');
        return receipt;
      },
    };
    const [receipt] = (await run(activities, { activity: 'chargeCard', args: [order] }, { activities: { chargeCard: { vendorDedup: true } } })) as [
      { id: string },
    ];
    const charges = vendor.actionsOn(CHARGE_ROUTE).filter((action) => (action.body as typeof order).orderId === order.orderId);
    expect(charges).toHaveLength(1);
    expect(receipt.id).toBe(charges[0]!.id);
    expect(attempts).toBe(2);
  });

  it('keeps renewing the taker\'s lease after the paused owner it took over from finishes', async () => {
    const taskQueue = uniqueName('tq');
    const workflowId = uniqueName('wf');
    const paused = new Set<string>();
    // Renewals of a paused attempt's claim never arrive, as with a worker in a long GC pause.
    const store: ClaimStore = Object.assign(Object.create(schema.store) as ClaimStore, {
      renewLeases: (claims: Parameters<ClaimStore['renewLeases']>[0], leaseMs: number) =>
        schema.store.renewLeases(claims.filter((claim) => !paused.has(claim.token)), leaseMs),
    });
    const gates: Array<() => void> = [];
    const activities = {
      send: async () => {
        const attempt = Context.current().info.attempt;
        if (attempt === 1) {
          const { rows } = await schema.pool.query<{ token: string }>(`SELECT token FROM "${schema.name}".claims WHERE workflow_id = $1`, [workflowId]);
          paused.add(rows[0]!.token);
        }
        await new Promise<void>((resolve) => gates.push(resolve));
        return attempt;
      },
    };
    await temporal.withWorker(
      { taskQueue, activities, interceptors: interceptors({ store, leaseMs: 1_500, activities: { send: { vendorDedup: true } } }) },
      async () => {
        const handle = await temporal.client.workflow.start('callActivity', {
          taskQueue,
          workflowId,
          args: [{ activity: 'send', args: [], startToCloseTimeoutMs: 3_000, maximumAttempts: 2 }],
        });
        await until(() => gates.length === 2, 15_000); // attempt 2 took the lapsed claim over and runs
        gates[0]!(); // the paused attempt 1 wakes up and finishes
        await sleep(2_200); // longer than the lease: only renewals keep attempt 2 alive
        const { rows } = await schema.pool.query(
          `SELECT attempt, coalesce(lease_expires_at > now(), false) AS alive FROM "${schema.name}".claims WHERE workflow_id = $1`,
          [workflowId],
        );
        gates[1]!();
        expect(rows).toEqual([{ attempt: 2, alive: true }]);
        await handle.terminate();
      },
    );
  });
});

describe('a waiting attempt', () => {
  it('heartbeats without wiping the details the running attempt heartbeated', async () => {
    const taskQueue = uniqueName('tq');
    let release: (() => void) | undefined;
    const activities = {
      slow: async () => {
        const context = Context.current();
        if (context.info.attempt > 1) throw new Error('the waiting attempt must not run the body');
        context.heartbeat('progress-1');
        await new Promise<void>((resolve) => (release = resolve));
        return 'done';
      },
    };
    await temporal.withWorker({ taskQueue, activities, interceptors: interceptors() }, async () => {
      const handle = await temporal.client.workflow.start('callActivity', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'slow', args: [], startToCloseTimeoutMs: 2_500 }],
      });
      try {
        const details = await heartbeatOfAttempt(handle, 2);
        expect(details).toBe('progress-1');
      } finally {
        release?.();
      }
      expect(await handle.result()).toEqual(['done']);
    });
  });
});

describe('many attempts waiting on one key', () => {
  it('all get the one answer, each re-reading the claim once per poll interval (a quarter of the lease, at most a second)', async () => {
    const taskQueue = uniqueName('tq');
    const key = uniqueName('shared');
    let reads = 0;
    const store: ClaimStore = Object.assign(Object.create(schema.store) as ClaimStore, {
      get: (claimKey: string) => (reads++, schema.store.get(claimKey)),
    });
    let release: (() => void) | undefined;
    const owns = new Promise<void>((resolve) => (release = resolve));
    let bodies = 0;
    const activities = { send: async () => (bodies++ === 0 ? (await owns, 'once') : 'twice') };
    const options: Options = { store, leaseMs: 6_000, maxWaitMs: 30_000, activities: { send: { key: () => key } } };
    const waiters = 19;
    await temporal.withWorker({ taskQueue, activities, interceptors: interceptors(options) }, async () => {
      const start = () =>
        temporal.client.workflow.start('callActivity', {
          taskQueue,
          workflowId: uniqueName('wf'),
          args: [{ activity: 'send', args: [], startToCloseTimeoutMs: 30_000 }],
        });
      const owner = await start();
      await until(() => bodies === 1);
      const others = await Promise.all(Array.from({ length: waiters }, start));
      await until(() => reads >= waiters, 15_000); // every waiter read the claim once and waits
      const readsBefore = reads;
      await sleep(6_000);
      const readsWhileWaiting = reads - readsBefore;
      release!();
      const results = await Promise.all([owner, ...others].map((handle) => handle.result()));
      expect(results.every((result) => JSON.stringify(result) === '["once"]')).toBe(true);
      // A lease of 6 s: a read a second, 6 in these 6 s (7 with the timers' slack), never a busy loop.
      expect(readsWhileWaiting).toBeGreaterThanOrEqual(waiters * 5);
      expect(readsWhileWaiting).toBeLessThanOrEqual(waiters * 8);
    });
    expect(bodies).toBe(1);
  });
});

/** The heartbeat details on record once attempt `attempt` has heartbeated. */
async function heartbeatOfAttempt(handle: WorkflowHandle, attempt: number): Promise<unknown> {
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; await sleep(100)) {
    const pending = (await handle.describe()).raw.pendingActivities?.[0];
    const started = Number(pending?.lastStartedTime?.seconds ?? 0) * 1000 + Math.floor((pending?.lastStartedTime?.nanos ?? 0) / 1e6);
    const beat = Number(pending?.lastHeartbeatTime?.seconds ?? 0) * 1000 + Math.floor((pending?.lastHeartbeatTime?.nanos ?? 0) / 1e6);
    if (pending?.attempt === attempt && beat >= started && started > 0) {
      const [payload] = pending.heartbeatDetails?.payloads ?? [];
      return payload ? defaultPayloadConverter.fromPayload(payload as never) : undefined;
    }
  }
  throw new Error(`attempt ${attempt} never heartbeated`);
}

async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(25)) if (condition()) return;
  throw new Error('condition not met in time');
}
