/**
 * Attack (round 3): rotating away from a leaked secret does not take its authority away.
 *
 * A worker host is compromised: the attacker has secret A and the worker's database password.
 * The operator rotates as the README says: every worker gets B with A in `previousSecrets`, then
 * `keys activate` puts B in force (and re-signs every row with B). The workers must keep A "until
 * the claims made before the change are past your retention", to find those claims under their
 * A-keys. For that whole window they also accept any row signed with A, whenever it was written:
 * the attacker computes the A-key of an action that has not happened yet (here an order id it can
 * guess), inserts a `completed` row for it (with the secret in force, which the trigger checks,
 * then changes `secret_id` to A's: an UPDATE, which no trigger checks), signed with A. When the
 * order is charged, the worker looks the action up under its A-key, finds the row, verifies it
 * with A, and returns the attacker's receipt: the card is never charged.
 *
 * After the activation every genuine row is signed with B; a row signed with a retired secret
 * that was written after its retirement decides nothing a worker should obey.
 */
import { describe, expect, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { ClaimOperations, PostgresClaimStore, idempotencyInterceptors } from '../../src/index.js';
import { DeploymentSecret, canonicalize, deriveCustomKey, keyedFormat } from '../../src/key/index.js';
import { recordText } from '../../src/store/record-authentication.js';
import { payloadToJson } from '../../src/store/payload-json.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const LEAKED = 'test-deployment-secret-of-at-least-32-bytes!';
const ROTATED = 'the-rotated-deployment-secret-of-at-least-32-bytes';

describe('a secret rotated away after a leak', () => {
  it('no longer signs records that workers obey', async () => {
    const operations = (options: { secret: string; previousSecrets?: string[] }) => new ClaimOperations(schema.pool, { schema: schema.name, ...options });
    await operations({ secret: LEAKED }).activateSecret({ reason: 'initial rollout' });
    // The leak is noticed: B rolls out with A kept for the claims made before, then B is put in force.
    await operations({ secret: ROTATED, previousSecrets: [LEAKED] }).activateSecret({ reason: 'rotation after a leak' });

    // The attacker: secret A, the worker role's password, and a guessable order id.
    const orderId = `order-${Math.floor(Math.random() * 1e6)}`;
    const args = [{ orderId, amountCents: 99_00 }];
    const leaked = new DeploymentSecret(LEAKED);
    const format = keyedFormat(leaked);
    const fields = {
      namespace: 'default',
      key: deriveCustomKey({ namespace: 'default', activityType: 'chargeCard', customKey: orderId }, format),
      fingerprint: format.fingerprint(canonicalize(args, 'args')),
      state: 'completed' as const,
      token: '00000000-0000-4000-8000-000000000000',
      attempt: 1,
      claimedBy: 'host-a/1',
      workflowId: 'wf-attacker',
      runId: null,
      activityId: '1',
      result: payloadToJson(defaultPayloadConverter.toPayload({ id: 'ch_forged', status: 'done' })),
      outcomeNote: null,
      outcomeDetail: null,
    };
    const inForce = new DeploymentSecret(ROTATED).id;
    await schema.pool.query(
      `INSERT INTO "${schema.name}".claims (key, state, token, fingerprint, namespace, activity_type, workflow_id, run_id, activity_id,
         attempt, claimed_by, result_payload, finished_at, record_mac, key_format, secret_id)
       VALUES ($1, 'completed', $2, $3, 'default', 'chargeCard', 'wf-attacker', NULL, '1', 1, 'host-a/1', $4, now(), $5, 2, $6)`,
      [fields.key, fields.token, fields.fingerprint, fields.result, leaked.sign(recordText(fields)), inForce],
    );
    await schema.pool.query(`UPDATE "${schema.name}".claims SET secret_id = $2 WHERE key = $1`, [fields.key, leaked.id]);

    // Later, the order is charged, on a worker configured as the README says for the rotation.
    let charges = 0;
    const activities = {
      chargeCard: async () => {
        charges++;
        return { id: 'ch_real', status: 'done' };
      },
    };
    const store = new PostgresClaimStore({ pool: schema.pool, schema: schema.name, secret: ROTATED, previousSecrets: [LEAKED, 'unkeyed'] });
    const settings = { chargeCard: { key: ({ args: [charge] }: { args: readonly unknown[] }) => (charge as { orderId: string }).orderId } };
    const taskQueue = uniqueName('tq');
    const outcome = await temporal.withWorker({ taskQueue, activities, interceptors: { activity: idempotencyInterceptors({ store, activities: settings }) } }, () =>
      temporal.client.workflow
        .execute('callActivity', { taskQueue, workflowId: uniqueName('wf'), args: [{ activity: 'chargeCard', args, maximumAttempts: 1 }] })
        .then(
          (value) => ({ value }),
          (error: unknown) => ({ failure: (error as { cause?: { cause?: { type?: string } } }).cause?.cause?.type ?? String(error) }),
        ),
    );
    // Fails today: { charges: 0, outcome: { value: [{ id: 'ch_forged' }] } }.
    expect({ charges, outcome }).not.toEqual({ charges: 0, outcome: { value: [{ id: 'ch_forged', status: 'done' }] } });
  });
});
