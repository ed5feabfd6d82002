/**
 * Attack on migration 9's `prune_ledger`, the operator role's only way to
 * delete ledger rows: it promises never to delete a call under a day old, and
 * checks that by comparing the interval it is given with `interval '1 day'`.
 * Postgres compares intervals as if a month were 30 days, but subtracts one
 * from `now()` by the calendar: `-12 mons +361 days` compares as a day
 * (-360 + 361) yet puts the cutoff days in the future, so a call made a
 * moment ago goes, and the ledger's evidence that a call went out with it.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { grantStatements } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';

const schema = useTestSchema(import.meta.filename);
const operatorRole = `ti_attack_op_${randomBytes(3).toString('hex')}`;
const PASSWORD = `pw_${randomBytes(6).toString('hex')}`;
let operator: pg.Pool;

beforeAll(async () => {
  await schema.pool.query(`CREATE ROLE "${operatorRole}" LOGIN PASSWORD '${PASSWORD}'`);
  for (const statement of grantStatements({ operator: operatorRole }, schema.name)) await schema.pool.query(statement);
  const url = new URL(inject('databaseUrl'));
  url.username = operatorRole;
  url.password = PASSWORD;
  operator = new pg.Pool({ connectionString: url.toString(), max: 2 });
});

afterAll(async () => {
  await operator.end();
  await schema.pool.query(`DROP OWNED BY "${operatorRole}" CASCADE`);
  await schema.pool.query(`DROP ROLE "${operatorRole}"`);
});

/** A whole call (started and finished) that went out a minute ago. */
async function recentCall(): Promise<string> {
  const callId = randomUUID();
  const insert = `INSERT INTO "${schema.name}".ledger (call_id, event, key, activity_type, activity_id, attempt, worker, outcome, at)
    VALUES ($1, $2, $3, 'chargeCard', '1', 1, 'w-1', $4, now() - interval '1 minute')`;
  const key = `k-${randomUUID()}`;
  await schema.pool.query(insert, [callId, 'started', key, null]);
  await schema.pool.query(insert, [callId, 'finished', key, 'completed']);
  return callId;
}

async function entriesOf(callId: string): Promise<number> {
  const { rows } = await schema.pool.query<{ n: string }>(`SELECT count(*) AS n FROM "${schema.name}".ledger WHERE call_id = $1`, [callId]);
  return Number(rows[0]!.n);
}

describe('prune_ledger, called by the operator role with a mixed-sign interval', () => {
  for (const horizon of ['-12 mons +361 days', '-120 mons +3601 days']) {
    it(`keeps a call made a minute ago (horizon '${horizon}')`, async () => {
      const callId = await recentCall();
      const attempt = operator.query(`SELECT "${schema.name}".prune_ledger($1::interval, 'routine retention', false) AS pruned`, [horizon]);
      // Either refused as under a day, or run without touching the recent call: never the recent call gone.
      await attempt.catch((error: unknown) => expect((error as { code?: string }).code).toBe('TI003'));
      expect(await entriesOf(callId)).toBe(2);
    });
  }
});
