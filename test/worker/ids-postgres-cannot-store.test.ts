/**
 * Found in review: a workflow id Temporal accepts but Postgres `text` cannot hold (U+0000). The claim's
 * INSERT fails with SQLSTATE 22021 on every attempt, which the interceptor reports as
 * IdempotencyStoreUnavailable, retryable: Temporal retries the activity for as long as its retry policy
 * allows (by default, for ever), each attempt failing the same way, and nobody is told why. The
 * same value goes into the ledger, waiters and refusals; pgText() already escapes U+0000 for notes.
 *
 * Expected: a non-retryable refusal naming the bad input (IdempotencyInvalidKeyInput on workflowId) on the
 * first attempt, and no call: not a retryable "store unavailable" for ever.
 */
import { describe, expect, it } from 'vitest';
import { PostgresClaimStore, idempotencyInterceptors } from '../../src/index.js';
import type { StoreLogger } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { applicationFailureIn } from '../../dev/failures.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const quiet: StoreLogger = { warn: () => undefined, error: () => undefined };

describe('a workflow id with U+0000', () => {
  it('is refused at once, naming workflowId, instead of IdempotencyStoreUnavailable on every attempt', async () => {
    const store = new PostgresClaimStore({ pool: schema.pool, schema: schema.name, logger: quiet });
    let calls = 0;
    const activities = {
      sendSms: async (input: { to: string }) => {
        calls++;
        return { sent: input.to };
      },
    };
    const taskQueue = uniqueName('tq');
    const outcome = await temporal.withWorker({ taskQueue, activities, interceptors: { activity: idempotencyInterceptors({ store }) } }, () =>
      temporal.client.workflow
        .execute('callActivity', {
          taskQueue,
          workflowId: `order-42\u0000${uniqueName('wf')}`,
          args: [{ activity: 'sendSms', args: [{ to: '+4915112345678' }], maximumAttempts: 5 }],
        })
        .then(
          (returned) => ({ returned }),
          (error: unknown) => ({
            failed: applicationFailureIn(error)?.type ?? String(error),
            nonRetryable: applicationFailureIn(error)?.nonRetryable,
            why: applicationFailureIn(error)?.message,
          }),
        ),
    );
    expect({ outcome, calls }, 'refused once, non-retryably, naming the field: not told the store is unavailable (Postgres 22021) on every attempt').toEqual({
      outcome: {
        failed: 'IdempotencyInvalidKeyInput',
        nonRetryable: true,
        why: expect.stringContaining('workflowId is unsupported: it contains U+0000'),
      },
      calls: 0,
    });
  });
});
