/**
 * Attack 11: the store remembers the key format in force from whichever statement answered last
 * (`claimOf` sets `this.inForce` from every row read), not from the newest snapshot. Two reads in
 * flight across `keys activate` answer out of order under load: one that started before the
 * activation committed, answering after one that started after it, puts the old secret back. A
 * claim derived meanwhile under the new secret (its key and its `secret_id` column) is then signed
 * with the old one (`insertClaim` signs with `this.inForce`, `secretIdOf` names the key's secret):
 * the trigger admits it (format and secret in force), and every worker reads a claim that does not
 * authenticate. A retry of a call still running (Temporal timed its attempt out) is refused as
 * IdempotencyRecordRejected, non-retryable ("forged"), instead of waiting; should the owner die
 * before recording, the next attempt is told the row was forged instead of orphaned.
 *
 * Expected: a claim a worker inserts authenticates.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it, inject } from 'vitest';
import { ClaimOperations, PostgresClaimStore } from '../../src/index.js';
import type { StoreLogger } from '../../src/index.js';
import { DeploymentSecret, deriveCustomKey, keyedFormat } from '../../src/key/index.js';
import { useTestSchema } from '../support/schema.js';
import { claimRequest } from '../support/claims.js';

const schema = useTestSchema(import.meta.filename);
const OLD = 'the-secret-of-last-year-of-at-least-32-bytes-000';
const NEW = 'the-secret-rotated-to-of-at-least-32-bytes-111111';
const quiet: StoreLogger = { warn: () => undefined, error: () => undefined };

describe('reads answering out of order across keys activate', () => {
  it('a claim keyed with the secret in force is signed with it, not with the one a late read remembered', async () => {
    const { pool, name } = schema;
    await new ClaimOperations(pool, { schema: name, secret: OLD }).activateSecret({ reason: 'first secret', force: true });

    const workerPool = new pg.Pool({ connectionString: inject('databaseUrl'), max: 4 });
    workerPool.on('error', () => undefined);
    // A slow answer to one read (a busy network or server): its result arrives later than the next read's.
    let holdNextGet: Promise<void> | undefined;
    const realQuery = workerPool.query.bind(workerPool) as (...args: unknown[]) => Promise<unknown>;
    (workerPool as unknown as { query: unknown }).query = async (...args: unknown[]) => {
      const config = args[0] as { name?: string };
      const gate = typeof config === 'object' && config.name?.endsWith('_get') ? holdNextGet : undefined;
      if (gate) holdNextGet = undefined;
      const result = await realQuery(...args);
      if (gate) await gate;
      return result;
    };
    const worker = new PostgresClaimStore({ pool: workerPool, schema: name, secret: NEW, previousSecrets: [OLD], logger: quiet });
    const oldFormat = keyedFormat(new DeploymentSecret(OLD));
    const earlier = claimRequest({
      key: deriveCustomKey({ namespace: 'default', activityType: 'placeCall', customKey: randomUUID() }, oldFormat),
      activityType: 'placeCall',
      keyFormat: { version: 2, secretId: oldFormat.secretId },
    });
    expect((await worker.begin(earlier, 60_000)).won).toBe(true);

    let release!: () => void;
    holdNextGet = new Promise<void>((resolve) => (release = resolve));
    const slowRead = worker.get(earlier.key); // its snapshot: OLD in force
    await new Promise((resolve) => setTimeout(resolve, 200));

    await new ClaimOperations(pool, { schema: name, secret: NEW, previousSecrets: [OLD] }).activateSecret({ reason: 'rotation', force: true });
    await worker.get(earlier.key); // a read after the activation: NEW in force
    const formats = await worker.keyFormats();
    expect(formats.inForce.secretId).toBe(new DeploymentSecret(NEW).id);

    release();
    await slowRead; // answers last, with the format of its older snapshot

    const request = claimRequest({
      key: deriveCustomKey({ namespace: 'default', activityType: 'placeCall', customKey: randomUUID() }, formats.inForce),
      activityType: 'placeCall',
      keyFormat: { version: 2, secretId: formats.inForce.secretId },
    });
    const begun = await worker.begin(request, 60_000);
    expect(begun.won).toBe(true);

    const other = new PostgresClaimStore({ pool, schema: name, secret: NEW, previousSecrets: [OLD], logger: quiet });
    const read = await other.get(request.key);
    expect({ state: read?.state, authenticity: read?.authenticity }, 'another worker reads the running claim').toEqual({
      state: 'claimed',
      authenticity: 'verified',
    });
    await Promise.all([worker.close(), other.close()]);
    await workerPool.end();
  });
});
