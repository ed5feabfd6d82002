/** The redirect watch listens while a worker's attempts run: every way an attempt ends leaves it off (never leaked on, never counted below zero). */
import diagnosticsChannel from 'node:diagnostics_channel';
import { CompleteAsyncError } from '@temporalio/common';
import { expect, it } from 'vitest';
import { IdempotentActivityEnvironment } from '../../src/testing/index.js';

const listening = () => diagnosticsChannel.channel('http.client.request.start').hasSubscribers;

function gate(): { readonly opened: Promise<void>; readonly open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

it('a sync throw, an async throw, CompleteAsyncError, a success, a cancel before the call: on during each, off after', async () => {
  const env = new IdempotentActivityEnvironment();
  const during: boolean[] = [];
  const after: boolean[] = [];
  const endings: Array<(n: number) => unknown> = [
    () => {
      throw new Error('sync');
    },
    async () => {
      throw new Error('async');
    },
    async () => {
      throw new CompleteAsyncError();
    },
    async (n) => n,
  ];
  for (const [i, ending] of endings.entries()) {
    const attempt = env.attempt({ activityType: 'chargeCard', workflowExecution: { workflowId: `wf-${i}`, runId: 'r' } });
    const chargeCard = (n: number) => {
      during.push(listening());
      return ending(n) as Promise<unknown>;
    };
    await attempt.run(chargeCard, i).catch(() => undefined);
    after.push(listening());
  }
  // Cancelled while the claim was taken: the activity is not run.
  const cancelled = env.attempt({ activityType: 'chargeCard', workflowExecution: { workflowId: 'wf-cancelled', runId: 'r' } });
  cancelled.cancel();
  await cancelled
    .run(async function chargeCard() {
      during.push(listening());
    })
    .catch(() => undefined);
  after.push(listening());

  expect({ during, after, end: listening() }).toEqual({ during: [true, true, true, true], after: [false, false, false, false, false], end: false });
});

it('three attempts at once, ending in another order than they started: on until the last one ends', async () => {
  const env = new IdempotentActivityEnvironment();
  const gates = [gate(), gate(), gate()];
  const runs = gates.map(({ opened }, i) =>
    env.attempt({ activityType: 'chargeCard', workflowExecution: { workflowId: `wf-${i}`, runId: 'r' } }).run(async function chargeCard() {
      await opened;
      return listening();
    }),
  );
  await new Promise((resolve) => setTimeout(resolve, 20));
  gates[1]!.open();
  gates[0]!.open();
  const firstTwo = await Promise.all([runs[0], runs[1]]);
  const withOneLeft = listening();
  gates[2]!.open();
  await runs[2];

  expect({ firstTwo, withOneLeft, end: listening() }).toEqual({ firstTwo: [true, true], withOneLeft: true, end: false });
});
