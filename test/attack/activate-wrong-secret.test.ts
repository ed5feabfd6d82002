/**
 * Attack (round 3): `keys activate` with a secret no worker has (the CLI's environment holds another
 * deployment's secret, or a second operator activates concurrently with the wrong one).
 *
 * Every row the workers signed (with their secret, before the activation) fails to authenticate
 * under the CLI's secret. The activation reports them as rejected, says "workers refuse them", which
 * is false (the workers know that secret), and switches the format in force anyway: from that
 * moment no worker can claim anything (every guarded activity fails IdempotencyStoreUnavailable on
 * every attempt) until someone works out that the CLI, not the rows, was wrong. Nothing asked the
 * operator to confirm putting in force a secret that signed none of the rows it found.
 */
import { describe, expect, it } from 'vitest';
import { PostgresClaimStore, idempotencyInterceptors } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { runCli } from '../support/cli.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const WORKERS_SECRET = 'test-deployment-secret-of-at-least-32-bytes!';
const OTHER_SECRET = 'staging-deployment-secret-of-at-least-32-bytes';

describe('keys activate with a secret that signed none of the rows', () => {
  it('does not put in force a secret the workers do not have', async () => {
    let charges = 0;
    const activities = {
      chargeCard: async (order: { orderId: string }) => {
        charges++;
        return { id: `ch_${order.orderId}` };
      },
    };
    const store = new PostgresClaimStore({ pool: schema.pool, schema: schema.name, secret: WORKERS_SECRET, previousSecrets: ['unkeyed'] });
    const taskQueue = uniqueName('tq');
    const interceptors = { activity: idempotencyInterceptors({ store }) };
    const run = (orderId: string) =>
      temporal.client.workflow
        .execute('callActivity', { taskQueue, workflowId: uniqueName('wf'), args: [{ activity: 'chargeCard', args: [{ orderId }], maximumAttempts: 2 }] })
        .then(
          (value) => ({ value }),
          (error: unknown) => ({ failure: (error as { cause?: { cause?: { type?: string } } }).cause?.cause?.type ?? String(error) }),
        );
    const outcome = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      const before = await run('o-1');
      const activated = await runCli(['keys', 'activate', '--json', '--reason', 'rollout', '--schema', schema.name], {
        TEMPORAL_IDEMPOTENCY_SECRET: OTHER_SECRET,
      });
      const after = await run('o-2');
      return { before, activateExit: activated.code, activateStderr: activated.stderr, after };
    });
    // Fails today: the activation exits 0 (its stderr says the workers' own rows are refused by the
    // workers), and from then on every claim fails: o-2 ends in IdempotencyStoreUnavailable.
    expect({ ...outcome, charges }, JSON.stringify(outcome)).toMatchObject({
      before: { value: [{ id: 'ch_o-1' }] },
      after: { value: [{ id: 'ch_o-2' }] },
      charges: 2,
    });
  });
});
