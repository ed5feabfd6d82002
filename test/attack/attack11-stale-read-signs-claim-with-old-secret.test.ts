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
import { describe, expect, it, inject } from 'vitest';
import { ClaimOperations, PostgresClaimStore } from '../../src/index.js';
import type { StoreLogger } from '../../src/index.js';
import { DeploymentSecret, keyedFormat } from '../../src/key/index.js';
import { useTestSchema } from '../support/schema.js';
import { poolWithSlowReads } from '../support/slow-reads.js';
import { keyedClaimRequest } from '../support/claims.js';

const schema = useTestSchema(import.meta.filename);
const OLD = 'the-secret-of-last-year-of-at-least-32-bytes-000';
const NEW = 'the-secret-rotated-to-of-at-least-32-bytes-111111';
const quiet: StoreLogger = { warn: () => undefined, error: () => undefined };

describe('reads answering out of order across keys activate', () => {
  it('a claim keyed with the secret in force is signed with it, not with the one a late read remembered', async () => {
    const { pool, name } = schema;
    await new ClaimOperations(pool, { schema: name, secret: OLD }).activateSecret({ reason: 'first secret', force: true });

    // A slow answer to one read (a busy network or server): its result arrives later than the next read's.
    const { pool: workerPool, holdNextGet } = poolWithSlowReads(inject('databaseUrl'));
    const worker = new PostgresClaimStore({ pool: workerPool, schema: name, secret: NEW, previousSecrets: [OLD], logger: quiet });
    const oldFormat = keyedFormat(new DeploymentSecret(OLD));
    const earlier = keyedClaimRequest(oldFormat);
    expect((await worker.begin(earlier, 60_000)).won).toBe(true);

    const release = holdNextGet();
    const slowRead = worker.get(earlier.key); // its snapshot: OLD in force
    await new Promise((resolve) => setTimeout(resolve, 200));

    await new ClaimOperations(pool, { schema: name, secret: NEW, previousSecrets: [OLD] }).activateSecret({ reason: 'rotation', force: true });
    await worker.get(earlier.key); // a read after the activation: NEW in force
    const formats = await worker.keyFormats();
    expect(formats.inForce.secretId).toBe(new DeploymentSecret(NEW).id);

    release();
    await slowRead; // answers last, with the format of its older snapshot

    const request = keyedClaimRequest(formats.inForce);
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
