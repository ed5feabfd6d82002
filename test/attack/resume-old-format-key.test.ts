/**
 * Attack (round 3): a workflow refused before `keys activate` waits in resumable() on the claim's
 * format-1 key. After the activation, its resumed call claims *that* key as it is: it never looks
 * at the action's key in the format in force (nor does a fresh call, keyed in the new format, look
 * at the resumed call's row with the fingerprint it was written with).
 *
 * - Double call: the operator releases the old key with --no-signal (or its signal fails: exit 6),
 *   a duplicate workflow for the same action (same custom key) runs it under the new-format key,
 *   then `resume` tells the waiting workflow to call again: it claims the released old key, which
 *   is free, and the call goes out a second time.
 * - False refusal: the resumed call runs once under the old key, recording the new format's
 *   fingerprint; a later call of the same action finds that row through its previous key, compares
 *   it with the old format's fingerprint and is refused as IdempotencyKeyReuse ("a custom key
 *   reused for a different action"), non-retryably, though it is the very same action.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, inject, it } from 'vitest';
import { OutcomeUnknownError, PostgresClaimStore, idempotencyInterceptors } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import type { TestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { runCli } from '../support/cli.js';
import { waitingOn } from '../support/pending-refusal.js';

// One schema per test: each starts before any secret is in force.
const schemas = [useTestSchema(import.meta.filename), useTestSchema(import.meta.filename)] as const;
const temporal = useTemporal();
const SECRET = 'test-deployment-secret-of-at-least-32-bytes!';
const cliOn = (schema: TestSchema) => (...args: string[]) =>
  runCli([...args, '--schema', schema.name], { TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_IDEMPOTENCY_SECRET: SECRET });

/** A vendor call whose first attempt ends ambiguously (the vendor, it turns out, dropped it). */
function placeCallActivities() {
  const calls: string[] = [];
  return {
    calls,
    activities: {
      placeCall: async (_call: { callId: string }) => {
        calls.push('call');
        if (calls.length === 1) throw new OutcomeUnknownError('the line dropped; the vendor shows nothing');
        return { id: `placed_${calls.length}` };
      },
    },
  };
}

// The README's configuration: the secret rolled out with 'unkeyed' kept, then `keys activate`.
const settings = { placeCall: { key: ({ args }: { args: readonly unknown[] }) => (args[0] as { callId: string }).callId } };
const storeOn = (schema: TestSchema) =>
  new PostgresClaimStore({ pool: schema.pool, schema: schema.name, secret: SECRET, previousSecrets: ['unkeyed'] });

describe('a workflow refused before the activation, resumed after it', () => {
  it('does not call again when the same action already ran under the key in force', async () => {
    const [schema] = schemas;
    const cli = cliOn(schema);
    const callId = uniqueName('call');
    const { calls, activities } = placeCallActivities();
    const taskQueue = uniqueName('tq');
    const interceptors = { activity: idempotencyInterceptors({ store: storeOn(schema), activities: settings }) };
    const outcome = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      const waiting = await temporal.client.workflow.start('resumableCallActivity', {
        taskQueue,
        workflowId: uniqueName('w1'),
        args: [{ activity: 'placeCall', args: [{ callId }] }],
      });
      const { key: oldKey } = await waitingOn(waiting);
      expect((await cli('keys', 'activate', '--reason', 'secret rollout')).code).toBe(0);

      // The vendor shows nothing: it did not happen. Released without a signal (or its signal failed).
      expect((await cli('release', oldKey, '--no-signal', '--reason', 'vendor shows nothing')).code).toBe(0);
      // A duplicate submission of the same action (same custom key) runs it, once, as it should.
      const duplicate = await temporal.client.workflow.execute('callActivity', {
        taskQueue,
        workflowId: uniqueName('w2'),
        args: [{ activity: 'placeCall', args: [{ callId }] }],
      });
      // The runbook: the workflow still waits, so tell it.
      const resumed = await cli('resume', oldKey);
      const result = await Promise.race([waiting.result(), sleep(10_000).then(() => 'still waiting' as const)]);
      return { duplicate, resumeStdout: resumed.stdout, result };
    });
    // Fails today: the resumed call claims the released old-format key, which nothing else holds,
    // and places the call a second time (calls: 3, the waiting workflow gets placed_3).
    expect({ vendorCalls: calls.length, result: outcome.result }, JSON.stringify(outcome)).toEqual({
      vendorCalls: 2,
      result: outcome.duplicate,
    });
  });

  it('answers a later call of the same action from the resumed call\'s record, not with IdempotencyKeyReuse', async () => {
    const [, schema] = schemas;
    const cli = cliOn(schema);
    const callId = uniqueName('call');
    const { calls, activities } = placeCallActivities();
    const taskQueue = uniqueName('tq');
    const interceptors = { activity: idempotencyInterceptors({ store: storeOn(schema), activities: settings }) };
    const outcome = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      const waiting = await temporal.client.workflow.start('resumableCallActivity', {
        taskQueue,
        workflowId: uniqueName('w1'),
        args: [{ activity: 'placeCall', args: [{ callId }] }],
      });
      const { key: oldKey } = await waitingOn(waiting);
      expect((await cli('keys', 'activate', '--reason', 'secret rollout')).code).toBe(0);
      // It did not happen: released, the waiting workflow is told and calls again, once.
      expect((await cli('release', oldKey, '--reason', 'vendor shows nothing')).code).toBe(0);
      const resumedResult = await waiting.result();
      // A duplicate submission of the same action: it happened, so its record answers.
      const later = await temporal.client.workflow
        .execute('callActivity', { taskQueue, workflowId: uniqueName('w2'), args: [{ activity: 'placeCall', args: [{ callId }] }] })
        .then(
          (value) => ({ value }),
          (error: unknown) => ({ failure: String((error as { cause?: { cause?: unknown } }).cause?.cause ?? error) }),
        );
      return { resumedResult, later };
    });
    // Fails today: the later call is refused as IdempotencyKeyReuse (the resumed call's row holds
    // the new format's fingerprint under the old-format key), non-retryably.
    expect({ vendorCalls: calls.length, later: outcome.later }, JSON.stringify(outcome)).toEqual({
      vendorCalls: 2,
      later: { value: outcome.resumedResult },
    });
  });
});
