/**
 * Attack 8 (end to end): the same defect as attack8-record-signed-by-retired-secret.test.ts, through a
 * worker and the Temporal server. A call in flight across a routine rotation (`keys activate NEW`, then
 * `keys retire OLD`, the workers holding NEW as secret and OLD in previousSecrets) is recorded signed
 * with the retired OLD (the store signs with the format it last read); the workflow's repeat of the same
 * action (here: the next call with the same custom key) is refused with IdempotencyRecordRejected instead
 * of being answered from the record of the call that happened.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ClaimOperations, PostgresClaimStore, idempotencyInterceptors } from '../../src/index.js';
import type { StoreLogger } from '../../src/index.js';
import { DeploymentSecret, keyedFormat } from '../../src/key/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { applicationFailureIn } from '../../dev/failures.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const OLD2 = 'another-secret-of-last-year-at-least-32-bytes-222';
const NEW2 = 'another-secret-rotated-to-at-least-32-bytes-333333';
const quiet: StoreLogger = { warn: () => undefined, error: () => undefined };

describe('a call in flight across keys activate + keys retire, on a worker', () => {
  it('answers a repeat of the call from its record, through a worker and the Temporal server', async () => {
    const { pool, name } = schema;
    await new ClaimOperations(pool, { schema: name, secret: OLD2 }).activateSecret({ reason: 'first secret', force: true });
    const old2 = keyedFormat(new DeploymentSecret(OLD2));

    const store = new PostgresClaimStore({ pool, schema: name, secret: NEW2, previousSecrets: [OLD2], logger: quiet });
    let calls = 0;
    let started: () => void = () => undefined;
    const running = new Promise<void>((resolve) => (started = resolve));
    let hangUp: () => void = () => undefined;
    const ended = new Promise<void>((resolve) => (hangUp = resolve));
    const activities = {
      placeCall: async (input: { to: string }) => {
        calls++;
        started();
        await ended; // the phone call lasts a while
        return { callId: `CA-${input.to}`, answered: true };
      },
    };
    const byNumber = { key: ({ args }: { args: readonly unknown[] }) => (args[0] as { to: string }).to };
    const taskQueue = uniqueName('tq');
    const to = `+49151${randomUUID()}`;
    const outcome = await temporal.withWorker(
      { taskQueue, activities, interceptors: { activity: idempotencyInterceptors({ store, activities: { placeCall: byNumber } }) } },
      async () => {
        // One workflow places the call, then (a retry loop, a second step) asks for the same action again.
        const handle = await temporal.client.workflow.start('callActivity', {
          taskQueue,
          workflowId: uniqueName('wf'),
          args: [{ activity: 'placeCall', args: [{ to }], maximumAttempts: 1, times: 2, startToCloseTimeoutMs: 60_000 }],
        });
        await running;
        const operator = new ClaimOperations(pool, { schema: name, secret: NEW2, previousSecrets: [OLD2] });
        await operator.activateSecret({ reason: 'yearly rotation' });
        await operator.retireSecret(old2.secretId!, { reason: 'yearly rotation' });
        hangUp();
        return handle.result().then(
          (returned) => ({ returned }),
          (error: unknown) => ({ refused: applicationFailureIn(error)?.type }),
        );
      },
    );
    await store.close();
    expect({ outcome, calls }, 'the repeat of a call that happened once and was recorded is refused: IdempotencyRecordRejected').toEqual({
      outcome: { returned: [{ callId: `CA-${to}`, answered: true }, { callId: `CA-${to}`, answered: true }] },
      calls: 1,
    });
  });
});
