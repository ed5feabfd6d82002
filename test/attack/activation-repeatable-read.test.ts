/**
 * Attack (round 3): the claim trigger's "fresh snapshot" is fresh only under READ COMMITTED.
 *
 * Migration 7: the trigger takes the key-format lock shared, then reads `settings` "with a fresh
 * snapshot", so once `keys activate` commits no claim in the earlier format can appear, and a
 * lookup under the earlier key before claiming under the new one cannot race with it. Under
 * REPEATABLE READ (a database or role whose `default_transaction_isolation` says so, as some
 * shops set for every client), the INSERT's snapshot is taken when the statement starts, before
 * it waits for the lock: a claim that waited out the activation reads the format in force as it
 * was, and a format-1 claim is committed after the activation. A worker that already keys in
 * format 2 and looked that key up a moment before finds nothing and claims its own: two claims
 * for one action, both calls go out.
 */
import { describe, expect, inject, it, afterAll } from 'vitest';
import pg from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import { ClaimOperations, PostgresClaimStore } from '../../src/index.js';
import type { ClaimRequest } from '../../src/store/index.js';
import { useTestSchema } from '../support/schema.js';

const schema = useTestSchema(import.meta.filename);
const SECRET = 'test-deployment-secret-of-at-least-32-bytes!';
const pools: pg.Pool[] = [];
afterAll(() => Promise.all(pools.map((pool) => pool.end())));

function claimRequest(key: string): ClaimRequest {
  return {
    key,
    fingerprint: 'f',
    keyFormat: { version: 1, secretId: null },
    previousKeys: [],
    namespace: 'default',
    activityType: 'chargeCard',
    workflowId: 'wf',
    runId: null,
    activityId: '1',
    attempt: 1,
    claimedBy: 'host-a/1',
    deadlineMs: null,
  };
}

describe('keys activate while a claim waits for the key-format lock, on a repeatable-read database', () => {
  it('lets no claim in the earlier format commit after the activation', async () => {
    const repeatableRead = new pg.Pool({ connectionString: inject('databaseUrl'), options: '-c default_transaction_isolation=repeatable\\ read' });
    pools.push(repeatableRead);
    const worker = new PostgresClaimStore({ pool: repeatableRead, schema: schema.name, secret: SECRET, previousSecrets: ['unkeyed'] });
    await worker.keyFormats(); // format 1 in force, as this worker last read it

    // The activation's locked pass takes a while on a big table: held here by hand, then the real activation.
    const slowPass = await schema.pool.connect();
    await slowPass.query('BEGIN');
    await slowPass.query('SELECT pg_advisory_xact_lock(8273181, hashtext($1))', [`${schema.name}/key-format`]);
    const activation = new ClaimOperations(schema.pool, { schema: schema.name, secret: SECRET }).activateSecret({ reason: 'rollout' });
    await sleep(300);
    const claim = worker.begin(claimRequest('a'.repeat(64)), 30_000).then(
      (begun) => ({ won: begun.won }),
      (error: unknown) => ({ error: (error as Error).name }),
    );
    await sleep(300);
    await slowPass.query('COMMIT');
    slowPass.release();
    await activation;

    const result = await claim;
    const { rows } = await schema.pool.query<{ key_format: number }>(`SELECT key_format FROM "${schema.name}".claims`);
    const inForce = await new ClaimOperations(schema.pool, { schema: schema.name }).keyFormatInForce();
    await worker.close();
    // Fails today: the claim commits in format 1 after format 2 was put in force ({ won: true }, key_format 1).
    expect({ inForce: inForce.version, result, formats: rows.map((row) => row.key_format) }).toEqual({
      inForce: 2,
      result: { error: 'KeyFormatChangedError' },
      formats: [],
    });
  });
});
