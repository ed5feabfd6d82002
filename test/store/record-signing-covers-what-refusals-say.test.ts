/**
 * Found in review: what the record's MAC does not cover, the operator reads as authenticated.
 *
 * SECURITY.md: the MAC covers "what decides a call and what a refusal says". The refusal says
 * "Refusing to run <activity_type> again: attempt N on worker W claimed key K at <claimed_at>", and
 * `show` prints `activity_type`, `claimed_at` beside `record: verified`; neither column is signed.
 * A writer of the claims table (no secret) relabels an orphaned charge as a newsletter send from
 * three days ago: `show` vouches for it (`record: verified`), `list --activity chargeCard` no longer
 * finds it, and a later refusal on the key says "Refusing to run sendNewsletter". The operator
 * checks the newsletter vendor, finds nothing, and releases it: the charge runs a second time.
 */
import { describe, expect, it } from 'vitest';
import { OutcomeUnknownError, PostgresClaimStore, idempotencyInterceptors } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { activityFailureOf } from '../support/failures.js';
import { runCli } from '../support/cli.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const SECRET = 'test-deployment-secret-of-at-least-32-bytes!';

describe('columns a refusal and `show` print', () => {
  it('are not vouched for as verified after a writer without the secret changed them', async () => {
    const activities = {
      chargeCard: async () => {
        throw new OutcomeUnknownError('the connection dropped after the request was sent');
      },
    };
    const store = new PostgresClaimStore({ pool: schema.pool, schema: schema.name, secret: SECRET });
    const taskQueue = uniqueName('tq');
    const failure = await activityFailureOf(
      temporal.withWorker({ taskQueue, activities, interceptors: { activity: idempotencyInterceptors({ store }) } }, () =>
        temporal.client.workflow.execute('callActivity', {
          taskQueue,
          workflowId: uniqueName('wf'),
          args: [{ activity: 'chargeCard', args: [{ orderId: 'o-1', amountCents: 4200 }], maximumAttempts: 1 }],
        }),
      ),
    );
    const { key } = failure.details?.[0] as { key: string };

    // A writer of the claims table, without the secret.
    await schema.pool.query(
      `UPDATE "${schema.name}".claims SET activity_type = 'sendNewsletter', claimed_at = now() - interval '3 days' WHERE key = $1`,
      [key],
    );
    const shown = await runCli(['show', key, '--json', '--schema', schema.name], { TEMPORAL_IDEMPOTENCY_SECRET: SECRET });
    const detail = JSON.parse(shown.stdout) as { record: string; activity_type: string };
    // Fails today: `show` says record verified, activity_type sendNewsletter.
    expect({ record: detail.record, activityType: detail.activity_type }).not.toEqual({ record: 'verified', activityType: 'sendNewsletter' });
  });
});
