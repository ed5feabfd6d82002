/**
 * Attack 11: `keys retire` run by an operator role (or in a database) whose default transaction
 * isolation is REPEATABLE READ. retireSecret's locked transaction (src/store/key-rotation.ts) starts
 * with `SELECT pg_advisory_xact_lock(...)`: under REPEATABLE READ that first statement fixes the
 * transaction's snapshot before the lock is granted. An outcome being written while retire waits for
 * that lock (the settling statement holds the admission lock shared, and signs with the secret still
 * in force for it: not yet retired) commits after the snapshot: the "pass under the lock for what came
 * meanwhile" does not see it, so it is not signed again, and the retirement commits. The record of a
 * call that happened stays signed by the retired secret, and every worker refuses it
 * (IdempotencyRecordRejected). Under READ COMMITTED the same run re-signs it (first case passes).
 *
 * Expected: whatever the operator role's default isolation, the record verifies after keys retire.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it, inject } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { ClaimOperations, PostgresClaimStore } from '../../src/index.js';
import type { StoreLogger } from '../../src/index.js';
import { DeploymentSecret, canonicalize, deriveCustomKey, keyedFormat } from '../../src/key/index.js';
import { useTestSchema } from '../support/schema.js';
import { claimRequest } from '../support/claims.js';

const schema = useTestSchema(import.meta.filename);
const OLD = 'the-secret-of-last-year-of-at-least-32-bytes-000';
const NEW = 'the-secret-rotated-to-of-at-least-32-bytes-111111';
const quiet: StoreLogger = { warn: () => undefined, error: () => undefined };

async function until(pool: pg.Pool, sql: string): Promise<boolean> {
  for (let i = 0; i < 200; i++) {
    const { rows } = await pool.query<{ n: number }>(sql);
    if (rows[0]!.n > 0) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return false;
}

describe('keys retire by an operator role at REPEATABLE READ, while a record is being written', () => {
  it.each(['read committed', 'repeatable read', 'serializable'])('operator at %s: the record verifies afterwards', async (isolation) => {
    const { pool, name } = schema;
    await pool.query(`TRUNCATE "${name}".claims`);
    await pool.query(`UPDATE "${name}".settings SET key_format = 1, secret_id = NULL, retired_secret_ids = '{}'`);
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

    const operatorPool = new pg.Pool({
      connectionString: inject('databaseUrl'),
      max: 4,
      options: `-c default_transaction_isolation=${isolation.replace(' ', '\\ ')}`,
    });
    operatorPool.on('error', () => undefined);
    const operator = new ClaimOperations(operatorPool, { schema: name, secret: NEW, previousSecrets: [OLD] });
    await operator.activateSecret({ reason: 'yearly rotation', force: true });
    // The worker's call is still running; it has read nothing since, and signs its record with OLD (not retired yet).

    // The lease renewal holds the claim's row for a moment as the record is written: the record has taken the
    // admission lock shared (signed_by_retired) and waits for the row.
    const renewal = await pool.connect();
    await renewal.query('BEGIN');
    await renewal.query(`UPDATE "${name}".claims SET lease_expires_at = now() + interval '1 minute' WHERE key = $1`, [request.key]);
    const recording = worker.complete(begun.claim, defaultPayloadConverter.toPayload({ callId: 'CA123', answered: true }));
    expect(
      await until(pool, `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event = 'transactionid' AND query LIKE '%signed_by_retired%'`),
      'the record waits for the row',
    ).toBe(true);

    const retiring = operator.retireSecret(old.secretId!, { reason: 'yearly rotation' });
    expect(
      await until(pool, `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event = 'advisory' AND query LIKE '%pg_advisory_xact_lock(%'`),
      'keys retire waits for the record in flight',
    ).toBe(true);
    await renewal.query('COMMIT');
    renewal.release();
    const completed = await recording;
    const report = await retiring;

    const fresh = new PostgresClaimStore({ pool, schema: name, secret: NEW, previousSecrets: [OLD], logger: quiet });
    const read = await fresh.get(request.key);
    const signer = (await pool.query<{ secret_id: string }>(`SELECT secret_id FROM "${name}".claims WHERE key = $1`, [request.key])).rows[0];
    expect(
      {
        completed,
        retired: report.retired === old.secretId,
        state: read?.state,
        authenticity: read?.authenticity,
        signedBy: signer?.secret_id === old.secretId ? 'retired OLD' : 'NEW',
      },
      'the call happened and its record must be obeyed after the retirement',
    ).toEqual({ completed: true, retired: true, state: 'completed', authenticity: 'verified', signedBy: 'NEW' });
    await Promise.all([worker.close(), fresh.close()]);
    await operatorPool.end();
  });
});
