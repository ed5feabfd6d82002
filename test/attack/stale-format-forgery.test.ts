/**
 * Attack (round 3): a forged record obeyed after `keys activate`.
 *
 * A worker reads the key format in force once, and again only when a claim of its is refused for
 * its format or when it meets an *unsigned* row. A row signed by a secret it does not know is
 * judged by the format it last read: while that is format 1 (before any secret), such a row is
 * "not checked" and obeyed. So an attempt that began waiting for a live owner before the
 * activation keeps format 1 in mind for the whole wait: a writer of the claims table who, after
 * the activation, turns the awaited row into a `completed` one with any MAC and an unknown secret
 * id (then NOTIFYs, which anyone who can connect may) has its forged result returned to the
 * workflow as the vendor's, and the charge is never made. SECURITY.md promises that once a secret
 * is in force such a row is refused with IdempotencyRecordRejected.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { ClaimOperations, PostgresClaimStore, idempotencyInterceptors } from '../../src/index.js';
import { outcomeChannel } from '../../src/store/index.js';
import { UNKEYED, canonicalize, deriveCustomKey } from '../../src/key/index.js';
import { payloadToJson } from '../../src/store/payload-json.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const SECRET = 'test-deployment-secret-of-at-least-32-bytes!';

describe('a waiting attempt across the activation of a secret', () => {
  it('refuses a row forged after the activation, signed by an unknown secret', async () => {
    const orderId = uniqueName('order');
    const args = [{ orderId, amountCents: 4200 }];
    let charges = 0;
    const activities = {
      chargeCard: async () => {
        charges++;
        return { id: 'ch_real' };
      },
    };
    const settings = { chargeCard: { key: ({ args: [charge] }: { args: readonly unknown[] }) => (charge as { orderId: string }).orderId } };
    const trust = { secret: SECRET, previousSecrets: ['unkeyed' as const] };
    const workerStore = new PostgresClaimStore({ pool: schema.pool, schema: schema.name, ...trust });
    const taskQueue = uniqueName('tq');
    const workflowId = uniqueName('wf');

    // Another worker (with the secret; format 1 still in force) holds the claim and is still calling.
    const key = deriveCustomKey({ namespace: 'default', activityType: 'chargeCard', customKey: orderId }, UNKEYED);
    const owner = new PostgresClaimStore({ pool: schema.pool, schema: schema.name, ...trust });
    const owned = await owner.begin(
      {
        key,
        fingerprint: UNKEYED.fingerprint(canonicalize(args, 'args')),
        keyFormat: { version: 1, secretId: null },
        previousKeys: [],
        namespace: 'default',
        activityType: 'chargeCard',
        workflowId,
        runId: null,
        activityId: '1',
        attempt: 1,
        claimedBy: 'host-b/4711',
        deadlineMs: 90_000,
      },
      90_000,
    );
    expect(owned.won).toBe(true);

    const interceptors = { activity: idempotencyInterceptors({ store: workerStore, activities: settings, maxWaitMs: 60_000 }) };
    const outcome = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      const handle = await temporal.client.workflow.start('callActivity', {
        taskQueue,
        workflowId,
        args: [{ activity: 'chargeCard', args, startToCloseTimeoutMs: 60_000, maximumAttempts: 1 }],
      });
      // This worker's attempt finds the live owner and waits for its outcome.
      for (let i = 0; ; i++) {
        const { rows } = await schema.pool.query<{ awaited: boolean }>(`SELECT awaited FROM "${schema.name}".claims WHERE key = $1`, [key]);
        if (rows[0]?.awaited) break;
        if (i > 200) throw new Error('the attempt never waited on the owner');
        await sleep(100);
      }
      // Every worker has the secret: the operator puts it in force.
      await new ClaimOperations(schema.pool, { schema: schema.name, ...trust }).activateSecret({ reason: 'secret rollout' });

      // A writer of the claims table without the secret: "completed", a receipt of its choosing.
      const forged = payloadToJson(defaultPayloadConverter.toPayload({ id: 'ch_forged' }));
      await schema.pool.query(
        `UPDATE "${schema.name}".claims SET state = 'completed', result_payload = $2, finished_at = now(),
           record_mac = repeat('ab', 32), secret_id = 'deadbeef' WHERE key = $1`,
        [key, forged],
      );
      await schema.pool.query('SELECT pg_notify($1, $2)', [outcomeChannel(schema.name), key]);
      return handle.result().then(
        (value) => ({ value }),
        (error: unknown) => ({ failure: (error as { cause?: { cause?: { type?: string } } }).cause?.cause?.type ?? String(error) }),
      );
    });
    await owner.close();
    // Fails today: the waiting attempt still judges rows by format 1 and returns the forged receipt;
    // the card is never charged and the workflow believes it was.
    expect({ charges, outcome }).toEqual({ charges: 0, outcome: { failure: 'IdempotencyRecordRejected' } });
  });
});
