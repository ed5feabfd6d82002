/**
 * Attack on `keys activate`'s worker check (migration 10, `assertWorkersHold`): it refuses while a
 * worker seen lately lacks the secret being activated, but not while one lacks the secret in
 * force now. A worker rolled out with only the new secret (previousSecrets forgotten) passes the
 * check; once the new secret is in force it looks claims up under the new key and format 1's,
 * never under the old secret's, so it cannot see the charge made before the rotation, and the
 * workflow's next attempt of it (a retry, a reset) charges again.
 *
 * It is not even seen: until the activation it can claim nothing (the secret in force is not its
 * own), and a worker is noted only when it claims. The right outcome: a worker is noted when it
 * tries to claim, and activation is refused while one seen lately lacks the secret in force (it
 * could not find the claims keyed with it), as it is for the new one.
 */
import { describe, expect, it } from 'vitest';
import { ClaimOperations, PostgresClaimStore, idempotencyInterceptors } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const OLD_SECRET = 'the-secret-in-force-of-at-least-32-bytes-00000';
const NEW_SECRET = 'the-secret-rotated-to-of-at-least-32-bytes-1111';

describe('keys activate and a worker that lacks the secret in force', () => {
  it('refuses to activate rather than let that worker charge again', async () => {
    const { pool, name } = schema;
    await new ClaimOperations(pool, { schema: name, secret: OLD_SECRET }).activateSecret({ reason: 'first secret', force: true });

    const charged: string[] = [];
    const activities = {
      charge: async (input: { order: string }) => {
        charged.push(input.order);
        return { charged: input.order };
      },
    };
    const byOrder = { key: ({ args }: { args: readonly unknown[] }) => (args[0] as { order: string }).order };
    const workflowId = uniqueName('wf');
    const chargeOn = (store: PostgresClaimStore, workerIdentity: string) => {
      const taskQueue = uniqueName('tq');
      const interceptors = { activity: idempotencyInterceptors({ store, workerIdentity, activities: { charge: byOrder } }) };
      return temporal.withWorker({ taskQueue, activities, interceptors }, () =>
        temporal.client.workflow.execute('callActivity', {
          taskQueue,
          workflowId,
          workflowIdReusePolicy: 'ALLOW_DUPLICATE',
          args: [{ activity: 'charge', args: [{ order: 'order-7' }], maximumAttempts: 1 }],
        }),
      );
    };

    // Before the rotation: the charge happens on a worker with the secret in force.
    await chargeOn(new PostgresClaimStore({ pool, schema: name, secret: OLD_SECRET }), 'old-worker');
    expect(charged).toEqual(['order-7']);

    // The rollout replaces it (it is not seen any more) with a worker given only the new secret. Until the
    // activation it claims nothing (the secret in force is not its own: IdempotencyStoreUnavailable, retried).
    await pool.query(`UPDATE "${name}".workers SET seen_at = now() - interval '10 minutes' WHERE identity = 'old-worker'`);
    const newWorkerStore = new PostgresClaimStore({ pool, schema: name, secret: NEW_SECRET });
    const taskQueue = uniqueName('tq');
    await temporal
      .withWorker({ taskQueue, activities, interceptors: { activity: idempotencyInterceptors({ store: newWorkerStore, workerIdentity: 'new-worker' }) } }, () =>
        temporal.client.workflow.execute('callActivity', {
          taskQueue,
          workflowId: uniqueName('wf'),
          args: [{ activity: 'charge', args: [{ order: 'order-unrelated' }], maximumAttempts: 1 }],
        }),
      )
      .catch(() => undefined);

    // The operator activates the new secret, with a CLI given both.
    const activation = await new ClaimOperations(pool, { schema: name, secret: NEW_SECRET, previousSecrets: [OLD_SECRET] })
      .activateSecret({ reason: 'rotation' })
      .then(
        () => 'activated',
        (error: unknown) => (error as { reason?: string }).reason ?? String(error),
      );

    // The workflow runs order-7 again (a reset, say) on the new worker, restarted since (a store made now).
    if (activation === 'activated') {
      await chargeOn(new PostgresClaimStore({ pool, schema: name, secret: NEW_SECRET }), 'new-worker').catch(() => undefined);
    }
    // Fails today: activation succeeds and order-7 is charged twice.
    expect(charged.filter((order) => order === 'order-7')).toEqual(['order-7']);
    expect(activation).toBe('workers-lack-secret');
  });
});
