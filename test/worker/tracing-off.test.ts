/**
 * Without any OpenTelemetry setup (`@opentelemetry/api` installed, as in many
 * applications, but no SDK, no context manager, no OpenTelemetry interceptor),
 * tracing costs nothing and changes nothing: the same answers, and no span
 * made active around the activity or the reconciler. (Without the package at
 * all, the consumer tests run the packed library: `npm run test:consumers`.)
 */
import { describe, expect, it } from 'vitest';
import { trace } from '@opentelemetry/api';
import { Context } from '@temporalio/activity';
import { IdempotencyOrphanedClaim, IdempotencyPlugin, OutcomeUnknownError, PostgresClaimStore } from '../../src/index.js';
import { activityFailureOf } from '../support/failures.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

describe('without OpenTelemetry set up', () => {
  it('claims, replays, reconciles and refuses as ever, with no span active in the activity or the reconciler', async () => {
    const seenSpans: unknown[] = [];
    let sends = 0;
    const activities = {
      send: async (to: string) => {
        seenSpans.push(trace.getActiveSpan());
        sends++;
        return `sent to ${to}`;
      },
      charge: async () => {
        seenSpans.push(trace.getActiveSpan());
        if (Context.current().info.attempt === 1) throw new OutcomeUnknownError('gateway timeout');
        return 'charged by attempt 2';
      },
      uncertain: async () => {
        throw new OutcomeUnknownError('gateway timeout');
      },
    };
    const reconcile = async () => {
      seenSpans.push(trace.getActiveSpan());
      return { outcome: 'happened' as const, result: 'found at the vendor' };
    };
    const taskQueue = uniqueName('tq');
    const plugin = new IdempotencyPlugin<typeof activities>({
      store: new PostgresClaimStore({ pool: schema.pool, schema: schema.name }),
      activities: { charge: { reconcile } },
    });
    const call = (activity: string, times = 1) =>
      temporal.client.workflow.execute('callActivity', { taskQueue, workflowId: uniqueName('wf'), args: [{ activity, args: ['x'], times }] });
    const { sent, charged, refused } = await temporal.withWorker({ taskQueue, activities, plugins: [plugin] }, async () => ({
      sent: await call('send', 2),
      charged: await call('charge'),
      refused: await activityFailureOf(call('uncertain')),
    }));
    expect(sent).toEqual(['sent to x', 'sent to x']);
    expect(sends).toBe(1);
    expect(charged).toEqual(['found at the vendor']);
    expect(refused.type).toBe(IdempotencyOrphanedClaim);
    // send once, charge's first attempt, the reconciler: none of them under a span.
    expect(seenSpans).toEqual([undefined, undefined, undefined]);
  });
});
