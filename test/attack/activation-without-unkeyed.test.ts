/**
 * Attack (round 3): `keys activate` while a call is in flight, on workers configured as
 * SECURITY.md shows them (`new PostgresClaimStore({ pool, secret })`, no `previousSecrets`).
 *
 * Before the activation such a worker keys its claims in format 1 (sha256), as every worker does.
 * After it, it keys in format 2 and looks claims up in no earlier format: it was not given
 * `'unkeyed'`. Its own claim, made a second earlier and still running, is invisible to it. A
 * Temporal retry of that slow attempt (start-to-close timeout) claims the new-format key, which
 * is free, and calls the vendor while the first attempt is still calling: the card is charged
 * twice. Nothing refuses or warns: not the worker, not `keys activate`, not `keys status`.
 * With `previousSecrets: ['unkeyed']` the retry finds the live owner and waits for its result.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { PostgresClaimStore, idempotencyInterceptors } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { runCli } from '../support/cli.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const SECRET = 'test-deployment-secret-of-at-least-32-bytes!';

describe('keys activate with a call in flight, on workers given the secret as SECURITY.md shows', () => {
  it('does not let the retry of the running attempt charge the card a second time', async () => {
    const charges: number[] = [];
    const activities = {
      chargeCard: async (_charge: { orderId: string; amountCents: number }) => {
        charges.push(Date.now());
        // The vendor answers slowly: past the attempt's start-to-close timeout.
        await sleep(charges.length === 1 ? 7_000 : 0);
        return { id: `ch_${charges.length}` };
      },
    };
    const store = new PostgresClaimStore({ pool: schema.pool, schema: schema.name, secret: SECRET });
    const taskQueue = uniqueName('tq');
    const interceptors = { activity: idempotencyInterceptors({ store, maxWaitMs: 30_000 }) };
    const result = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      const handle = await temporal.client.workflow.start('callActivity', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'chargeCard', args: [{ orderId: 'o-1', amountCents: 4200 }], startToCloseTimeoutMs: 4_000, maximumAttempts: 3 }],
      });
      while (charges.length === 0) await sleep(50);
      // Every worker runs with the secret: the operator puts it in force, as the README says.
      const activated = await runCli(['keys', 'activate', '--reason', 'secret rollout', '--schema', schema.name], {
        TEMPORAL_IDEMPOTENCY_SECRET: SECRET,
      });
      expect(activated.code, activated.stderr).toBe(0);
      return handle.result();
    });
    // Fails today: attempt 2 (after the timeout) does not see attempt 1's format-1 claim and charges
    // again while attempt 1 is still charging (charges: 2).
    expect({ charges: charges.length, result }).toEqual({ charges: 1, result: [{ id: 'ch_1' }] });
  });
});
