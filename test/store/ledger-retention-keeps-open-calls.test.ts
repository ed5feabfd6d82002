/**
 * Found in review, on migration 9's `prune_ledger`: it keeps a call whose key still has a claim without an
 * outcome (the runbook needs its trail), but it judges the call by `min(key)` over the call's
 * entries. A compromised worker (the worker role may INSERT into the ledger, any column) adds the
 * `finished` entry a crashed call never got, under the call's id with another key that has no
 * open claim: the call now reads as settled, and the operator's routine prune deletes the only
 * evidence that the orphaned charge went out.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ClaimOperations, grantStatements } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { claimRequest } from '../support/claims.js';

const schema = useTestSchema(import.meta.filename);
const workerRole = `ti_attack_wk_${randomBytes(3).toString('hex')}`;
const PASSWORD = `pw_${randomBytes(6).toString('hex')}`;
let worker: pg.Pool;

beforeAll(async () => {
  await schema.pool.query(`CREATE ROLE "${workerRole}" LOGIN PASSWORD '${PASSWORD}'`);
  for (const statement of grantStatements({ worker: workerRole }, schema.name)) await schema.pool.query(statement);
  const url = new URL(inject('databaseUrl'));
  url.username = workerRole;
  url.password = PASSWORD;
  worker = new pg.Pool({ connectionString: url.toString(), max: 2 });
});

afterAll(async () => {
  await worker.end();
  await schema.pool.query(`DROP OWNED BY "${workerRole}" CASCADE`);
  await schema.pool.query(`DROP ROLE "${workerRole}"`);
});

describe('prune_ledger and a call whose claim has no outcome', () => {
  it('keeps the call, whatever other keys its entries were given', async () => {
    // A charge that went out 40 days ago; the worker crashed before recording it: the claim is open.
    const open = await schema.store.begin(claimRequest(), 60_000);
    await schema.store.markUnknown(open.claim, { summary: 'worker crashed mid-call', detail: null });
    const callId = randomUUID();
    await schema.pool.query(
      `INSERT INTO "${schema.name}".ledger (call_id, event, key, activity_type, activity_id, attempt, worker, at)
       VALUES ($1, 'started', $2, 'chargeCard', '1', 1, 'w-1', now() - interval '40 days')`,
      [callId, open.claim.key],
    );
    // The compromised worker completes the crashed call's trail under a key that sorts first and has no claim.
    await worker.query(
      `INSERT INTO "${schema.name}".ledger (call_id, event, key, activity_type, activity_id, attempt, worker, outcome, at)
       VALUES ($1, 'finished', '0', 'chargeCard', '1', 1, 'w-1', 'failed', now() - interval '40 days')`,
      [callId],
    );

    await new ClaimOperations(schema.pool, { schema: schema.name }).pruneLedger(30 * 86_400_000, { reason: 'routine retention' });

    const { rows } = await schema.pool.query(`SELECT event FROM "${schema.name}".ledger WHERE call_id = $1 AND event = 'started'`, [callId]);
    expect(rows).toEqual([{ event: 'started' }]);
  });
});
