/**
 * Attack on the key format in force as a worker remembers it: a worker that read a format keyed
 * with a secret it lacks (KeyFormatUnavailableError) never reads the format again, because only a
 * claim or a read re-reads it and it cannot derive a key to get that far. Once the operator
 * activates the secret this worker does hold, it still refuses every call as
 * IdempotencyStoreUnavailable, retried for ever, until the process restarts. (`keys activate`
 * refuses while such a worker is seen, since it also lacks the old secret; the operator forces it
 * here, as after a leak, when nothing keyed with the old secret must be found.)
 */
import { describe, expect, it } from 'vitest';
import { ClaimOperations, PostgresClaimStore, idempotencyInterceptors } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { applicationFailureIn } from '../../dev/failures.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const OLD_SECRET = 'the-secret-in-force-of-at-least-32-bytes-00000';
const NEW_SECRET = 'the-secret-rotated-to-of-at-least-32-bytes-1111';

describe('a worker that lacks the secret in force', () => {
  it('claims again once the secret it holds is put in force, without a restart', async () => {
    const { pool, name } = schema;
    await new ClaimOperations(pool, { schema: name, secret: OLD_SECRET }).activateSecret({ reason: 'first secret', force: true });
    const newOnly = new PostgresClaimStore({ pool, schema: name, secret: NEW_SECRET });
    const sent: string[] = [];
    const activities = { send: async (text: string) => void sent.push(text) };
    const taskQueue = uniqueName('tq');
    const send = (text: string) =>
      temporal.client.workflow
        .execute('callActivity', { taskQueue, workflowId: uniqueName('wf'), args: [{ activity: 'send', args: [text], maximumAttempts: 1 }] })
        .then(
          () => 'sent',
          (error: unknown) => applicationFailureIn(error)?.type ?? 'other failure',
        );
    const outcomes = await temporal.withWorker(
      { taskQueue, activities, interceptors: { activity: idempotencyInterceptors({ store: newOnly, workerIdentity: 'new-only' }) } },
      async () => {
        const before = await send('before the activation');
        await new ClaimOperations(pool, { schema: name, secret: NEW_SECRET, previousSecrets: [OLD_SECRET] }).activateSecret({ reason: 'rotation', force: true });
        return { before, after: await send('after the activation') };
      },
    );
    expect(outcomes).toEqual({ before: 'IdempotencyStoreUnavailable', after: 'sent' });
    expect(sent).toEqual(['after the activation']);
  });
});
