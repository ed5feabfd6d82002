/**
 * Attack 9: a15b00e refuses, in the settling statement, an outcome signed by a secret that is
 * retired. The check reads settings.retired_secret_ids in the statement's own snapshot, with no
 * lock: `keys retire` re-signs the rows under the claim admission lock and then adds the secret to
 * retired_secret_ids in the same transaction, but a complete (or markUnknown) neither takes that
 * lock (no trigger fires: it does not update `token`) nor sees the uncommitted retirement. A
 * complete that runs after retire's locked signing pass and before retire commits writes its
 * record signed with the secret being retired; retire then commits, and every worker refuses the
 * record of a call that happened (IdempotencyRecordRejected for a person).
 *
 * Here the window is held open by locking the settings row, so that retire waits at its UPDATE of
 * retired_secret_ids, after its signing passes: in production it is the few milliseconds of that
 * transaction, hit by any call ending during `keys retire`.
 *
 * Expected: the record of the call waits for the retirement (the settling statement asks a function
 * that takes the admission lock shared and reads the settings after it), is signed anew with the
 * secret in force, and verifies after the rotation.
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

describe('a call ending while keys retire runs', () => {
  it.each(['complete', 'markUnknown'] as const)('%s is not recorded signed by the secret being retired', async (settle) => {
    const { pool, name } = settle === 'complete' ? schema : unknownSchema;
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

    // Hold retire between its signing passes and its commit.
    const holder = await pool.connect();
    await holder.query('BEGIN');
    await holder.query(`SELECT 1 FROM "${name}".settings FOR UPDATE`);
    const retiring = operator.retireSecret(old.secretId!, { reason: 'yearly rotation' });
    let held = false;
    for (let i = 0; i < 200 && !held; i++) {
      const { rows } = await pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%retired_secret_ids = array_append%'`,
      );
      held = rows[0]!.n > 0;
      if (!held) await new Promise((resolve) => setTimeout(resolve, 50));
    }

    expect(held, 'retire waits at its UPDATE of retired_secret_ids, its signing passes done').toBe(true);

    // The call ends now: its worker records it. The record waits for the retirement in progress.
    const settling =
      settle === 'complete'
        ? worker.complete(begun.claim, defaultPayloadConverter.toPayload({ callId: 'CA123', answered: true }))
        : worker.markUnknown(begun.claim, { summary: 'the vendor timed out', detail: null });
    let waiting = false;
    for (let i = 0; i < 200 && !waiting; i++) {
      const { rows } = await pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory' AND query LIKE '%signed_by_retired%'`,
      );
      waiting = rows[0]!.n > 0;
      if (!waiting) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(waiting, 'the record waits for keys retire to finish').toBe(true);
    await holder.query('ROLLBACK');
    holder.release();
    await retiring;
    const completed = await settling;

    const fresh = new PostgresClaimStore({ pool, schema: name, secret: NEW, previousSecrets: [OLD], logger: quiet });
    const signer = (await pool.query<{ secret_id: string }>(`SELECT secret_id FROM "${name}".claims WHERE key = $1`, [request.key])).rows[0];
    const read = await fresh.get(request.key);
    expect(
      { completed, state: read?.state, authenticity: read?.authenticity, signedBy: signer?.secret_id === old.secretId ? 'retired OLD' : 'NEW' },
      'the call happened and was recorded while keys retire ran; its record is signed with the retired OLD and refused',
    ).toEqual({ completed: true, state: settle === 'complete' ? 'completed' : 'unknown', authenticity: 'verified', signedBy: 'NEW' });
    await Promise.all([worker.close(), fresh.close()]);
  });
});
