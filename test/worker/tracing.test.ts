/**
 * Tracing: with Temporal's OpenTelemetry interceptors on the worker, each
 * attempt's activity span says what idempotency decided (claimed, replayed,
 * waited, refused, taken over, reconciled) and holds the claim, the wait and
 * the reconciliation as child spans; nothing on any span carries an argument,
 * a result or an error's text.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { SpanStatusCode, trace } from '@opentelemetry/api';
import { Resource } from '@opentelemetry/resources';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { Context } from '@temporalio/activity';
import {
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryPlugin,
} from '@temporalio/interceptors-opentelemetry';
import type { ActivityInterceptorsFactory, WorkerPlugin } from '@temporalio/worker';
import {
  IdempotencyOrphanedClaim,
  IdempotencyPlugin,
  OutcomeUnknownError,
  PostgresClaimStore,
  idempotencyInterceptors,
} from '../../src/index.js';
import type { IdempotencyOptions } from '../../src/index.js';
import { activityFailureOf } from '../support/failures.js';
import { useTestSchema } from '../support/schema.js';
import { textsOn, useSpanRecorder } from '../support/spans.js';
import type { TracedAttempt } from '../support/spans.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const recorder = useSpanRecorder();

/** Each worker its own store: IdempotencyPlugin closes the store's connections when its worker stops. */
const store = () => new PostgresClaimStore({ pool: schema.pool, schema: schema.name });
const openTelemetryPlugin = () => new OpenTelemetryPlugin({ resource: new Resource({}), spanProcessor: recorder.processor });
const openTelemetryActivity: ActivityInterceptorsFactory = (ctx) => ({
  inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
  outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
});

/** Both plugins, in the order given: IdempotencyPlugin puts the OpenTelemetry interceptor outside its own either way. */
function pluginsIn<Activities extends object>(
  order: 'idempotency first' | 'OpenTelemetry first',
  options: Omit<IdempotencyOptions<Activities>, 'store'> = {},
  claimStore: PostgresClaimStore = store(),
): WorkerPlugin[] {
  const idempotency = new IdempotencyPlugin<Activities>({ store: claimStore, ...options });
  return order === 'idempotency first' ? [idempotency, openTelemetryPlugin()] : [openTelemetryPlugin(), idempotency];
}

/** A store that says when an attempt first reads a claim (as one waiting for its owner's outcome does). */
class StoreWaitedOn extends PostgresClaimStore {
  private onRead = () => undefined as void;
  readonly waitedOn = new Promise<void>((resolve) => (this.onRead = resolve));

  override async get(key: string): ReturnType<PostgresClaimStore['get']> {
    this.onRead();
    return super.get(key);
  }
}

function named(spans: readonly ReadableSpan[], name: string): ReadableSpan[] {
  return spans.filter((span) => span.name === name);
}

function only(spans: readonly ReadableSpan[], name: string): ReadableSpan {
  const found = named(spans, name);
  expect(found, `spans named ${name}`).toHaveLength(1);
  return found[0]!;
}

/** Every span of the traces these attempts belong to: the activity spans, ours, and anything nested. */
function tracesOf(attempts: readonly TracedAttempt[]): ReadableSpan[] {
  const traceIds = new Set(attempts.map((attempt) => attempt.span.spanContext().traceId));
  return recorder.spans().filter((span) => traceIds.has(span.spanContext().traceId));
}

describe('with the OpenTelemetry interceptors registered', () => {
  it.each(['idempotency first', 'OpenTelemetry first'] as const)(
    'a first call claims and runs under the activity span; a repeat is replayed under its own, without the call (plugins: %s)',
    async (order) => {
      const bodySpans: Array<string | undefined> = [];
      const activities = {
        send: async (to: string) => {
          bodySpans.push(trace.getActiveSpan()?.spanContext().spanId);
          return `sent to ${to}`;
        },
      };
      const taskQueue = uniqueName('tq');
      const workflowId = uniqueName('wf');
      const results = await temporal.withWorker({ taskQueue, activities, plugins: pluginsIn(order) }, () =>
        temporal.client.workflow.execute('callActivity', { taskQueue, workflowId, args: [{ activity: 'send', args: ['secret-recipient'], times: 2 }] }),
      );
      expect(results).toEqual(['sent to secret-recipient', 'sent to secret-recipient']);

      const [first, repeat, ...more] = recorder.attemptsOf(workflowId);
      expect(more).toHaveLength(0);
      expect(first!.decisions).toEqual(['claimed']);
      expect(first!.span.attributes['idempotency.decision']).toBe('claimed');
      expect(first!.span.attributes['idempotency.key']).toMatch(/^[0-9a-f]{64}$/);
      expect(first!.children.map((span) => span.name)).toEqual(['idempotency.claim']);
      expect(first!.children[0]!.attributes).toEqual({ 'idempotency.claim.won': true });
      // The activity ran with the activity's span active: nothing of ours between them.
      expect(bodySpans).toEqual([first!.span.spanContext().spanId]);

      expect(repeat!.decisions).toEqual(['replayed']);
      expect(repeat!.span.attributes['idempotency.key']).toBe(first!.span.attributes['idempotency.key']);
      expect(repeat!.span.status.code).toBe(SpanStatusCode.OK);
      expect(repeat!.children.map((span) => span.attributes)).toEqual([{ 'idempotency.claim.won': false, 'idempotency.claim.found_state': 'completed' }]);

      expect(textsOn(tracesOf([first!, repeat!])).filter((text) => text.includes('secret-recipient'))).toEqual([]);
    },
  );

  it('a refusal is on the span: the failure type and its case, never the error text', async () => {
    let bodies = 0;
    const activities = {
      uncertain: async (card: string) => {
        bodies++;
        throw new OutcomeUnknownError(`timed out after sending ${card}`);
      },
    };
    const taskQueue = uniqueName('tq');
    const workflowId = uniqueName('wf');
    const start = () => temporal.client.workflow.execute('callActivity', { taskQueue, workflowId, args: [{ activity: 'uncertain', args: ['card-4242'] }] });
    const [thrower, later] = await temporal.withWorker({ taskQueue, activities, plugins: pluginsIn('idempotency first') }, async () => [
      await activityFailureOf(start()),
      // The same workflow id again: the same key, found without an outcome.
      await activityFailureOf(start()),
    ]);
    expect([thrower!.type, later!.type]).toEqual([IdempotencyOrphanedClaim, IdempotencyOrphanedClaim]);
    expect(bodies).toBe(1);

    const [first, second, ...more] = recorder.attemptsOf(workflowId);
    expect(more).toHaveLength(0);
    expect(first!.decisions).toEqual(['claimed', 'refused']);
    expect(second!.decisions).toEqual(['refused']);
    for (const attempt of [first!, second!]) {
      expect(attempt.span.attributes).toMatchObject({
        'idempotency.decision': 'refused',
        'idempotency.refusal_type': IdempotencyOrphanedClaim,
        'idempotency.refusal_reason': 'outcome-unknown',
      });
      expect(attempt.span.status.code).toBe(SpanStatusCode.ERROR);
    }
    expect(only(second!.children, 'idempotency.claim').attributes).toEqual({ 'idempotency.claim.won': false, 'idempotency.claim.found_state': 'unknown' });
    expect(textsOn(tracesOf([first!, second!])).filter((text) => text.includes('4242'))).toEqual([]);
  });

  it('a wait for a live owner is a child span, and the owner\'s result is the answer', async () => {
    const bodyAttempts: number[] = [];
    const waiting = new StoreWaitedOn({ pool: schema.pool, schema: schema.name });
    const activities = {
      slowSend: async () => {
        const { attempt } = Context.current().info;
        bodyAttempts.push(attempt);
        // Outlives its 4 s start-to-close timeout, alive, until attempt 2 waits for it (however late a loaded machine starts it).
        if (attempt === 1) await Promise.race([waiting.waitedOn, sleep(30_000)]);
        return `sent by attempt ${attempt}`;
      },
    };
    const taskQueue = uniqueName('tq');
    const workflowId = uniqueName('wf');
    const results = await temporal.withWorker({ taskQueue, activities, plugins: pluginsIn('idempotency first', {}, waiting) }, () =>
      temporal.client.workflow.execute('callActivity', { taskQueue, workflowId, args: [{ activity: 'slowSend', args: [], startToCloseTimeoutMs: 4_000 }] }),
    );
    expect(results).toEqual(['sent by attempt 1']);
    expect(bodyAttempts).toEqual([1]);

    const [owner, waiter, ...more] = recorder.attemptsOf(workflowId);
    expect(more).toHaveLength(0);
    expect(owner!.decisions).toEqual(['claimed']);
    expect(waiter!.decisions).toEqual(['waited', 'replayed']);
    expect(waiter!.children.map((span) => span.name)).toEqual(['idempotency.claim', 'idempotency.wait']);
    expect(only(waiter!.children, 'idempotency.claim').attributes['idempotency.claim.found_state']).toBe('claimed');
    expect(only(waiter!.children, 'idempotency.wait').attributes).toEqual({ 'idempotency.wait.outcome': 'settled' });
  });

  it('a reconciliation is a child span, with the vendor lookup\'s own span inside it', async () => {
    const activities = {
      charge: async () => {
        if (Context.current().info.attempt === 1) throw new OutcomeUnknownError('gateway timeout');
        return 'charged by attempt 2';
      },
    };
    const reconcile = () =>
      trace.getTracer('vendor-sdk').startActiveSpan('vendor.lookup', async (span) => {
        span.end();
        return { outcome: 'happened' as const, result: 'found at the vendor' };
      });
    const taskQueue = uniqueName('tq');
    const workflowId = uniqueName('wf');
    const plugins = pluginsIn<typeof activities>('OpenTelemetry first', { activities: { charge: { reconcile } } });
    const results = await temporal.withWorker({ taskQueue, activities, plugins }, () =>
      temporal.client.workflow.execute('callActivity', { taskQueue, workflowId, args: [{ activity: 'charge', args: [] }] }),
    );
    expect(results).toEqual(['found at the vendor']);

    const [first, retry, ...more] = recorder.attemptsOf(workflowId);
    expect(more).toHaveLength(0);
    // The ambiguous error is retried, not refused, so that the retry can ask the vendor.
    expect(first!.decisions).toEqual(['claimed']);
    expect(retry!.decisions).toEqual(['taken-over', 'reconciled:happened']);
    expect(retry!.children.map((span) => span.name)).toEqual(['idempotency.claim', 'idempotency.reconcile']);
    const reconciliation = only(retry!.children, 'idempotency.reconcile');
    expect(reconciliation.attributes).toEqual({ 'idempotency.reconcile.answer': 'happened' });
    expect(recorder.childrenOf(reconciliation).map((span) => span.name)).toEqual(['vendor.lookup']);
  });
});

describe('composed by hand', () => {
  const activities = { send: async (to: string) => `sent to ${to}` };

  async function callTwice(activity: ActivityInterceptorsFactory[]): Promise<string> {
    const taskQueue = uniqueName('tq');
    const workflowId = uniqueName('wf');
    const results = await temporal.withWorker({ taskQueue, activities, interceptors: { activity } }, () =>
      temporal.client.workflow.execute('callActivity', { taskQueue, workflowId, args: [{ activity: 'send', args: ['x'], times: 2 }] }),
    );
    expect(results).toEqual(['sent to x', 'sent to x']);
    return workflowId;
  }

  it('in the README\'s order, OpenTelemetry first, traces as the plugins do', async () => {
    const workflowId = await callTwice([openTelemetryActivity, ...idempotencyInterceptors({ store: store() })]);
    const attempts = recorder.attemptsOf(workflowId);
    expect(attempts.map((attempt) => attempt.decisions)).toEqual([['claimed'], ['replayed']]);
    expect(attempts.map((attempt) => attempt.children.map((span) => span.name))).toEqual([['idempotency.claim'], ['idempotency.claim']]);
  });

  it('the other way round, only the call that ran has an activity span, and idempotency adds nothing', async () => {
    const ours = () => recorder.spans().filter((span) => span.name.startsWith('idempotency.')).length;
    const before = ours();
    const workflowId = await callTwice([...idempotencyInterceptors({ store: store() }), openTelemetryActivity]);
    const attempts = recorder.attemptsOf(workflowId);
    expect(attempts).toHaveLength(1);
    expect(attempts[0]!.decisions).toEqual([]);
    expect(Object.keys(attempts[0]!.span.attributes).filter((name) => name.startsWith('idempotency.'))).toEqual([]);
    expect(ours()).toBe(before);
  });
});
