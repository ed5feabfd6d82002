/**
 * Attack (round 2): a workflow refused on a claim found under its previous key (a claim made
 * before the secret was put in force) was recorded as waiting under its *own* new-format key,
 * while its refusal, its pending query and `resumable()` carry the claim's old-format key.
 *
 * - `resolve` of the key the refusal names signals nobody but the claim's own workflow: the
 *   refused workflow is never told and waits for ever (its waiter row is under another key);
 * - `prune` does not see that a waiter still needs the record (the waiter is under the other
 *   key), deletes it, and the hand signal then makes the resumed call run a second time,
 *   exactly the double that 0faf15c fixed for keys without an alias.
 *
 * Here a custom key shared by two workflows makes "another workflow" concrete: W1 ran on a worker
 * before the secret was deployed (outcome unknown); W2, on a worker with the secret and
 * `previousSecrets: ['unkeyed']`, is refused on W1's claim and waits in resumable().
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, inject, it } from 'vitest';
import { ClaimOperations, IdempotencyOrphanedClaim, OutcomeUnknownError, PostgresClaimStore, idempotencyInterceptors } from '../../src/index.js';
import { OPERATOR_DECISION_SIGNAL } from '../../src/operator-decision.js';
import { UNKEYED, deriveCustomKey } from '../../src/key/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { activityFailureOf } from '../support/failures.js';
import { runCli } from '../support/cli.js';
import { waitingOn } from '../support/pending-refusal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const SECRET = 'test-deployment-secret-of-at-least-32-bytes!';
const cli = (...args: string[]) =>
  runCli([...args, '--schema', schema.name], { TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_IDEMPOTENCY_SECRET: SECRET });

describe('a workflow refused through an alias row', () => {
  it('is told of the decision, and its record is not pruned from under it', async () => {
    const callId = uniqueName('call');
    let bodies = 0;
    const activities = {
      placeCall: async () => {
        bodies++;
        if (bodies === 1) throw new OutcomeUnknownError('the line dropped after the vendor placed the call');
        return { id: 'placed_a_second_time' };
      },
    };
    const settings = { placeCall: { key: ({ args }: { args: readonly unknown[] }) => (args[0] as { callId: string }).callId } };
    const store = (options = {}) => new PostgresClaimStore({ pool: schema.pool, schema: schema.name, ...options });

    // W1, before the secret: the call went out, its outcome is unknown; W1 fails with the refusal.
    const tq1 = uniqueName('tq');
    const w1 = await activityFailureOf(
      temporal.withWorker({ taskQueue: tq1, activities, interceptors: { activity: idempotencyInterceptors({ store: store(), activities: settings }) } }, () =>
        temporal.client.workflow.execute('callActivity', {
          taskQueue: tq1,
          workflowId: uniqueName('w1'),
          args: [{ activity: 'placeCall', args: [{ callId }], maximumAttempts: 1 }],
        }),
      ),
    );
    expect(w1.type).toBe(IdempotencyOrphanedClaim);
    const oldKey = deriveCustomKey({ namespace: 'default', activityType: 'placeCall', customKey: callId }, UNKEYED);
    // Every worker now has the secret: the operator puts it in force. W1's claim is found under its old key.
    await new ClaimOperations(schema.pool, { schema: schema.name, secret: SECRET }).activateSecret({ reason: 'secret rollout', force: true });

    // W2, on a worker with the secret (migration window): refused on W1's claim, waits in resumable().
    const tq2 = uniqueName('tq');
    const interceptors = { activity: idempotencyInterceptors({ store: store({ secret: SECRET, previousSecrets: ['unkeyed'] }), activities: settings }) };
    const outcome = await temporal.withWorker({ taskQueue: tq2, activities, interceptors }, async () => {
      const handle = await temporal.client.workflow.start('resumableCallActivity', {
        taskQueue: tq2,
        workflowId: uniqueName('w2'),
        args: [{ activity: 'placeCall', args: [{ callId }] }],
      });
      const { key } = await waitingOn(handle);
      expect(key).toBe(oldKey);
      const waiterKeys = (await schema.pool.query<{ key: string }>(`SELECT key FROM "${schema.name}".waiters WHERE workflow_id = $1`, [handle.workflowId])).rows;

      // It happened: the operator resolves the key the refusal names.
      const resolved = await cli('resolve', key, '--result', '{"id":"call_1"}', '--reason', 'vendor shows call_1');
      let result = await Promise.race([handle.result(), sleep(8_000).then(() => 'still waiting' as const)]);
      const toldByResolve = result !== 'still waiting';
      if (!toldByResolve) {
        // Routine retention job; then the operator finds W2 still waiting and follows the runbook.
        await sleep(1_500);
        await cli('prune', '--older-than', '1s', '--force', '--reason', 'retention');
        await cli('resume', key);
        await handle.signal(OPERATOR_DECISION_SIGNAL, { key, decision: 'resolved' });
        result = await Promise.race([handle.result(), sleep(10_000).then(() => 'still waiting' as const)]);
      }
      return { toldByResolve, resolvedStderr: resolved.stderr, waiterKeys, result };
    });
    // Fails today: W2's waiter row is under its new-format key, so `resolve` signals only W1 (closed),
    // then prune deletes the resolved record and the hand signal runs the call a second time.
    expect({ toldByResolve: outcome.toldByResolve, bodies, result: outcome.result }, JSON.stringify(outcome)).toEqual({
      toldByResolve: true,
      bodies: 1,
      result: [{ id: 'call_1' }],
    });
  });
});
