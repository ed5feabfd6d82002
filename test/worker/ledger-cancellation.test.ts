/**
 * A call cancelled while the vendor holds its request (issue 10 item 6): the
 * claim says `unknown`, and the ledger's finish entry says `outcome-unknown`,
 * not `failed`: the two tables tell one story. Once by a workflow that cancels
 * the activity (delivered through its heartbeats), once by a worker shutdown
 * past its grace time. Real Temporal dev server, real Postgres, the fake vendor.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { Context } from '@temporalio/activity';
import { Worker } from '@temporalio/worker';
import { IdempotencyOrphanedClaim, idempotencyInterceptors } from '../../src/index.js';
import { CALL_ROUTE } from '../../activities/index.js';
import type { CallRequest } from '../../activities/index.js';
import { useVendor } from '../support/example-workers.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { activityFailureOf } from '../support/failures.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const vendor = useVendor();

const interceptors = () => ({ activity: idempotencyInterceptors({ store: schema.store, audit: true }) });

/** Places a call at the vendor, heartbeating while it waits, and aborts the request when the attempt is cancelled. */
function placeCallActivity(started: { count: number }) {
  return {
    placeCall: async (request: CallRequest) => {
      started.count++;
      const context = Context.current();
      const heartbeats = setInterval(() => context.heartbeat(), 100);
      try {
        const response = await fetch(new URL('/v1/calls', vendor.url), {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(request),
          signal: context.cancellationSignal,
        });
        return (await response.json()) as unknown;
      } finally {
        clearInterval(heartbeats);
      }
    },
  };
}

/**
 * The claim and both ledger views of the workflow's calls, once the ledger has the finish entry and
 * the claim is settled. The ledger sits inside the claim's interceptor, so its finish entry is
 * written first, and the claim a moment later.
 */
async function storyOf(workflowId: string) {
  const q = (sql: string) => schema.pool.query(sql, [workflowId]).then((result) => result.rows);
  for (const deadline = Date.now() + 15_000; Date.now() < deadline; await sleep(50)) {
    const finished = await q(`SELECT outcome FROM "${schema.name}".ledger WHERE workflow_id = $1 AND event = 'finished'`);
    const unsettled = await q(`SELECT 1 FROM "${schema.name}".claims WHERE workflow_id = $1 AND state = 'claimed'`);
    if (finished.length > 0 && unsettled.length === 0) break;
  }
  return {
    claims: await q(`SELECT state, outcome_note FROM "${schema.name}".claims WHERE workflow_id = $1`),
    ledgerEvents: await q(`SELECT event, outcome FROM "${schema.name}".ledger WHERE workflow_id = $1 ORDER BY id`),
    ledgerCalls: await q(`SELECT outcome, finished_at IS NOT NULL AS finished FROM "${schema.name}".ledger_calls WHERE workflow_id = $1`),
  };
}

function callsTo(call: CallRequest) {
  return vendor.actionsOn(CALL_ROUTE).filter((action) => (action.body as CallRequest).to === call.to);
}

async function until(condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(25)) if (condition()) return;
  throw new Error('condition not met in time');
}

function expectOneUnknownStory(story: Awaited<ReturnType<typeof storyOf>>): void {
  expect(story.claims).toEqual([{ state: 'unknown', outcome_note: expect.stringMatching(/cancel/i) }]);
  expect(story.ledgerEvents).toEqual([
    { event: 'started', outcome: null },
    { event: 'finished', outcome: 'outcome-unknown' },
  ]);
  expect(story.ledgerCalls).toEqual([{ outcome: 'outcome-unknown', finished: true }]);
}

describe('a call cancelled while the vendor holds the request', () => {
  it('is outcome-unknown in the ledger, as in the claim, when the workflow cancels the activity', async () => {
    const taskQueue = uniqueName('tq');
    const workflowId = uniqueName('wf');
    const call: CallRequest = { to: uniqueName('+49'), message: 'hello' };
    vendor.script(CALL_ROUTE, 'hang-after-performing'); // the vendor placed the call; its answer never comes
    const started = { count: 0 };
    await temporal.withWorker(
      {
        taskQueue,
        activities: placeCallActivity(started),
        interceptors: interceptors(),
        // Heartbeats go out at once, so the server's cancel reaches the running attempt quickly.
        defaultHeartbeatThrottleInterval: '100ms',
        maxHeartbeatThrottleInterval: '100ms',
      },
      async () => {
        const handle = await temporal.client.workflow.start('callActivity', {
          taskQueue,
          workflowId,
          args: [{ activity: 'placeCall', args: [call] }],
        });
        await until(() => callsTo(call).length === 1);
        await handle.cancel();
        await expect(handle.result()).rejects.toThrow();
        // The attempt learns of the cancel on its next heartbeat; the story is written when it ends.
        expectOneUnknownStory(await storyOf(workflowId));
      },
    );
    expect(started.count).toBe(1);
    expect(callsTo(call)).toHaveLength(1);
  });

  it('is outcome-unknown in the ledger, as in the claim, when the worker shuts down past its grace time, and the retry is refused', async () => {
    const taskQueue = uniqueName('tq');
    const workflowId = uniqueName('wf');
    const call: CallRequest = { to: uniqueName('+49'), message: 'hello' };
    vendor.script(CALL_ROUTE, 'hang-after-performing');
    const started = { count: 0 };
    const first = await Worker.create({
      connection: temporal.nativeConnection,
      taskQueue,
      workflowBundle: temporal.workflowBundle,
      activities: placeCallActivity(started),
      interceptors: interceptors(),
      shutdownGraceTime: '200ms',
    });
    const running = first.run();
    const handle = await temporal.client.workflow.start('callActivity', {
      taskQueue,
      workflowId,
      args: [{ activity: 'placeCall', args: [call], startToCloseTimeoutMs: 3_000 }],
    });
    await until(() => callsTo(call).length === 1);
    first.shutdown();
    await running;
    expectOneUnknownStory(await storyOf(workflowId));

    // The next attempt, on a worker that is up, is refused from the claim: the call is not placed again.
    const failure = await activityFailureOf(
      temporal.withWorker({ taskQueue, activities: placeCallActivity(started), interceptors: interceptors() }, () => handle.result()),
    );
    expect(failure.type).toBe(IdempotencyOrphanedClaim);
    expect(failure.nonRetryable).toBe(true);
    expect(started.count).toBe(1);
    expect(callsTo(call)).toHaveLength(1);
    const story = await storyOf(workflowId);
    expect(story.ledgerEvents).toHaveLength(2); // a refusal makes no call, so the ledger has nothing more
  });
});
