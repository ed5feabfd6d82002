/**
 * Attack 8: a call in flight across a routine rotation records its result signed by the secret the
 * rotation retired, so the record of a call that happened is refused (IdempotencyRecordRejected).
 *
 * The store signs every settling write (complete, markUnknown, handBack) with `this.inForce`, the
 * key format it last happened to read. A worker busy with one long call (a phone call, a slow
 * payout) reads no row meanwhile, so across `keys activate NEW` and then `keys retire OLD` (the
 * README's routine rotation: the workers already hold NEW as `secret`, OLD in previousSecrets) its
 * view stays OLD. When the call ends, `complete` signs the completed row with OLD. No trigger or
 * statement checks the signer of an UPDATE; retire's re-signing pass ran before. From then on every
 * worker refuses the row: a repeat of the action (a waiting later attempt, a workflow-scope repeat,
 * a shared custom key) gets IdempotencyRecordRejected, non-retryable, for a call that happened and
 * was recorded by a worker holding the secret in force.
 *
 * Expected: the record of a genuine call made by a worker that holds the secret in force verifies.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { ClaimOperations, PostgresClaimStore } from '../../src/index.js';
import type { StoreLogger } from '../../src/index.js';
import { DeploymentSecret, canonicalize, deriveCustomKey, keyedFormat } from '../../src/key/index.js';
import { useTestSchema } from '../support/schema.js';
import { claimRequest } from '../support/claims.js';

const schema = useTestSchema(import.meta.filename);
const unknownSchema = useTestSchema(`${import.meta.filename}-unknown`);
const OLD = 'the-secret-of-last-year-of-at-least-32-bytes-000';
const NEW = 'the-secret-rotated-to-of-at-least-32-bytes-111111';
const quiet: StoreLogger = { warn: () => undefined, error: () => undefined };

describe('a call in flight across keys activate + keys retire', () => {
  it('records its result so that it still verifies', async () => {
    const { pool, name } = schema;
    await new ClaimOperations(pool, { schema: name, secret: OLD }).activateSecret({ reason: 'first secret', force: true });

    // The workers are rolled out with the new secret, the old one kept to find old keys (README, rotation).
    const worker = new PostgresClaimStore({ pool, schema: name, secret: NEW, previousSecrets: [OLD], logger: quiet });
    const old = keyedFormat(new DeploymentSecret(OLD));
    const args = [{ call: `+4915112345678-${randomUUID()}` }];
    const request = claimRequest({
      key: deriveCustomKey({ namespace: 'default', activityType: 'placeCall', customKey: args[0]!.call }, old),
      fingerprint: old.fingerprint(canonicalize(args, 'args')),
      activityType: 'placeCall',
      keyFormat: { version: 2, secretId: old.secretId },
    });
    const begun = await worker.begin(request, 60_000);
    expect(begun.won).toBe(true);

    // While the call runs (minutes): the operator activates NEW and retires OLD, as a routine rotation.
    const operator = new ClaimOperations(pool, { schema: name, secret: NEW, previousSecrets: [OLD] });
    await operator.activateSecret({ reason: 'yearly rotation' });
    await operator.retireSecret(old.secretId!, { reason: 'yearly rotation' });

    // The call ends: its result is recorded by the worker that made it.
    expect(await worker.complete(begun.claim, defaultPayloadConverter.toPayload({ callId: 'CA123', answered: true }))).toBe(true);

    // Any worker (this one, or one started after the rotation) reads the record of the call.
    const fresh = new PostgresClaimStore({ pool, schema: name, secret: NEW, previousSecrets: [OLD], logger: quiet });
    const signer = (await pool.query<{ secret_id: string }>(`SELECT secret_id FROM "${name}".claims WHERE key = $1`, [request.key])).rows[0];
    const read = await fresh.get(request.key);
    expect(
      { state: read?.state, authenticity: read?.authenticity, signedBy: signer?.secret_id === old.secretId ? 'retired OLD' : 'NEW' },
      'the call happened and was recorded by a worker holding NEW; its record is signed with the retired OLD and refused',
    ).toEqual({ state: 'completed', authenticity: 'verified', signedBy: 'NEW' });
    await Promise.all([worker.close(), fresh.close()]);
  });

  it('marks an outcome unknown so that it still verifies (an unknown outcome stays IdempotencyOrphanedClaim)', async () => {
    const { pool, name } = unknownSchema;
    await new ClaimOperations(pool, { schema: name, secret: OLD }).activateSecret({ reason: 'first secret', force: true });
    const worker = new PostgresClaimStore({ pool, schema: name, secret: NEW, previousSecrets: [OLD], logger: quiet });
    const old = keyedFormat(new DeploymentSecret(OLD));
    const args = [{ call: `+4915112345678-${randomUUID()}` }];
    const request = claimRequest({
      key: deriveCustomKey({ namespace: 'default', activityType: 'placeCall', customKey: args[0]!.call }, old),
      fingerprint: old.fingerprint(canonicalize(args, 'args')),
      activityType: 'placeCall',
      keyFormat: { version: 2, secretId: old.secretId },
    });
    const begun = await worker.begin(request, 60_000);
    expect(begun.won).toBe(true);

    const operator = new ClaimOperations(pool, { schema: name, secret: NEW, previousSecrets: [OLD] });
    await operator.activateSecret({ reason: 'yearly rotation' });
    await operator.retireSecret(old.secretId!, { reason: 'yearly rotation' });

    // The call timed out at the vendor: its outcome is unknown, for a person (or reconcile) to settle.
    expect(await worker.markUnknown(begun.claim, { summary: 'the vendor timed out', detail: null })).toBe(true);
    const fresh = new PostgresClaimStore({ pool, schema: name, secret: NEW, previousSecrets: [OLD], logger: quiet });
    const read = await fresh.get(request.key);
    expect({ state: read?.state, authenticity: read?.authenticity }, 'unknown, and refused as a forgery rather than as an orphan').toEqual({
      state: 'unknown',
      authenticity: 'verified',
    });
    await Promise.all([worker.close(), fresh.close()]);
  });
});
