/**
 * Attack 10: migration 11's signed_by_retired() waits for `keys retire` on the admission lock and
 * then reads settings "in a snapshot of its own". That holds only under READ COMMITTED. A worker
 * role with default_transaction_isolation = 'repeatable read' (ALTER ROLE ... SET, or a pooler
 * default) runs every statement in a transaction whose snapshot is taken when the statement starts,
 * before the wait: the function reads retired_secret_ids as they were before the retirement
 * committed, answers "not retired", and the complete writes the outcome signed by the retired
 * secret (the claim row itself was re-signed by retire's first, unlocked pass, committed before the
 * statement's snapshot, so no serialization error stops it). Migration 7's trigger handles this
 * very case (FOR SHARE under RR/SERIALIZABLE); migration 11 does not.
 *
 * Expected: as under READ COMMITTED, the outcome is signed with the secret in force and verifies.
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

describe('a call ending while keys retire runs, worker role at REPEATABLE READ', () => {
  it.each(['read committed', 'repeatable read', 'serializable'])('%s: complete is not recorded signed by the secret being retired', async (isolation) => {
    const { pool, name } = schema;
    await pool.query(`TRUNCATE "${name}".claims`);
    await pool.query(`UPDATE "${name}".settings SET key_format = 1, secret_id = NULL, retired_secret_ids = '{}'`);
    const workerPool = new pg.Pool({
      connectionString: inject('databaseUrl'),
      max: 4,
      options: `-c default_transaction_isolation=${isolation.replace(' ', '\\ ')}`,
    });
    workerPool.on('error', () => undefined);
    const { rows: iso } = await workerPool.query<{ i: string }>(`SELECT current_setting('transaction_isolation') AS i`);
    expect(iso[0]!.i).toBe(isolation);
    await new ClaimOperations(pool, { schema: name, secret: OLD }).activateSecret({ reason: 'first secret', force: true });
    const worker = new PostgresClaimStore({ pool: workerPool, schema: name, secret: NEW, previousSecrets: [OLD], logger: quiet });
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
    expect(held).toBe(true);

    const settling = worker.complete(begun.claim, defaultPayloadConverter.toPayload({ callId: 'CA123', answered: true }));
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
    const completed = await settling.then(
      (v) => v,
      (e: Error) => `threw ${e.name}: ${e.message}`,
    );

    const fresh = new PostgresClaimStore({ pool, schema: name, secret: NEW, previousSecrets: [OLD], logger: quiet });
    const signer = (await pool.query<{ secret_id: string }>(`SELECT secret_id FROM "${name}".claims WHERE key = $1`, [request.key])).rows[0];
    const read = await fresh.get(request.key);
    expect(
      { completed, state: read?.state, authenticity: read?.authenticity, signedBy: signer?.secret_id === old.secretId ? 'retired OLD' : 'NEW' },
      'the call happened and was recorded while keys retire ran',
    ).toEqual({ completed: true, state: 'completed', authenticity: 'verified', signedBy: 'NEW' });
    await Promise.all([worker.close(), fresh.close()]);
    await workerPool.end();
  });

  it.each(['repeatable read', 'serializable'])(
    '%s: a lease renewal committed after the record\'s snapshot (40001) does not lose the record',
    async (isolation) => {
      const { pool, name } = schema;
      await pool.query(`TRUNCATE "${name}".claims`);
      await pool.query(`UPDATE "${name}".settings SET key_format = 1, secret_id = NULL, retired_secret_ids = '{}'`);
      await new ClaimOperations(pool, { schema: name, secret: OLD }).activateSecret({ reason: 'first secret', force: true });
      const workerPool = new pg.Pool({
        connectionString: inject('databaseUrl'),
        max: 4,
        options: `-c default_transaction_isolation=${isolation.replace(' ', '\\ ')}`,
      });
      workerPool.on('error', () => undefined);
      const worker = new PostgresClaimStore({ pool: workerPool, schema: name, secret: OLD, logger: quiet });
      const inForce = (await worker.keyFormats()).inForce;
      const request = claimRequest({ activityType: 'placeCall', keyFormat: { version: 2, secretId: inForce.secretId } });
      const keyed = { ...request, key: deriveCustomKey({ namespace: 'default', activityType: 'placeCall', customKey: randomUUID() }, inForce) };
      const begun = await worker.begin(keyed, 60_000);
      expect(begun.won).toBe(true);

      // A renewal of the claim's lease holds its row while the record's statement starts: the record waits, and
      // when the renewal commits it fails with 40001 (the row changed after its snapshot), having written nothing.
      const renewal = await pool.connect();
      await renewal.query('BEGIN');
      await renewal.query(`UPDATE "${name}".claims SET lease_expires_at = now() + interval '1 minute' WHERE key = $1`, [keyed.key]);
      const recording = worker.complete(begun.claim, defaultPayloadConverter.toPayload({ callId: 'CA123', answered: true }));
      for (let i = 0; i < 100; i++) {
        const { rows } = await pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'transactionid'`,
        );
        if (rows[0]!.n > 0) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await renewal.query('COMMIT');
      renewal.release();
      expect(await recording, 'the record is written again, not reported as a lost claim').toBe(true);
      const read = await new PostgresClaimStore({ pool, schema: name, secret: OLD, logger: quiet }).get(keyed.key);
      expect({ state: read?.state, authenticity: read?.authenticity }).toEqual({ state: 'completed', authenticity: 'verified' });
      await worker.close();
      await workerPool.end();
    },
  );
});
