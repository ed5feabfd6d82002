/**
 * Pruning the append-only ledger, as its owner: whole calls past the horizon
 * go, with a row on the operator trail; a call still finishing, one whose key
 * has no outcome yet, and anything under a day old stay. Any other role is
 * refused before anything goes.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { ClaimOperations, InvalidArgumentError, LedgerPruneRefusedError, grantStatements } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { claimRequest } from '../support/claims.js';

const schema = useTestSchema(import.meta.filename);
const DAY_MS = 86_400_000;

/** One call's entries, started and (unless null) finished the given number of days ago. */
async function call(key: string, startedDaysAgo: number, finishedDaysAgo: number | null): Promise<string> {
  const callId = randomUUID();
  const insert = `INSERT INTO "${schema.name}".ledger (call_id, event, key, activity_type, activity_id, attempt, worker, outcome, at)
    VALUES ($1, $2, $3, 'send', '1', 1, 'test', $4, now() - $5::float8 * interval '1 day')`;
  await schema.pool.query(insert, [callId, 'started', key, null, startedDaysAgo]);
  if (finishedDaysAgo !== null) await schema.pool.query(insert, [callId, 'finished', key, 'completed', finishedDaysAgo]);
  return callId;
}

async function callsLeft(): Promise<string[]> {
  const { rows } = await schema.pool.query<{ call_id: string }>(`SELECT DISTINCT call_id FROM "${schema.name}".ledger`);
  return rows.map((row) => row.call_id).sort();
}

describe('pruneLedger', () => {
  it('deletes whole calls past the horizon, keeps the rest, and says so on the operator trail', async () => {
    const operations = new ClaimOperations(schema.pool, { schema: schema.name });
    const old = await call(`k-${randomUUID()}`, 40, 40);
    const finishing = await call(`k-${randomUUID()}`, 40, 2); // started long ago, finished recently: kept whole
    const recent = await call(`k-${randomUUID()}`, 3, 3);
    const open = await schema.store.begin(claimRequest(), 60_000);
    await schema.store.markUnknown(open.claim, { summary: 'timeout after send', detail: null });
    const undecided = await call(open.claim.key, 40, 40); // its key still needs a person: kept

    expect(await operations.pruneLedger(30 * DAY_MS, { dryRun: true })).toBe(2);
    expect(await callsLeft()).toEqual([old, finishing, recent, undecided].sort());

    expect(await operations.pruneLedger(30 * DAY_MS, { reason: 'retention' })).toBe(2);
    expect(await callsLeft()).toEqual([finishing, recent, undecided].sort());
    const trail = await schema.pool.query(`SELECT action, reason, after_state FROM "${schema.name}".operator_actions WHERE action = 'prune-ledger'`);
    expect(trail.rows).toEqual([{ action: 'prune-ledger', reason: 'retention', after_state: { older_than_ms: 30 * DAY_MS, pruned_entries: 2 } }]);
  });

  it('refuses a horizon under a day, whatever the caller', async () => {
    const operations = new ClaimOperations(schema.pool, { schema: schema.name });
    await call(`k-${randomUUID()}`, 0.5, 0.5);
    const before = await callsLeft();
    await expect(operations.pruneLedger(3_600_000)).rejects.toThrow(InvalidArgumentError);
    await expect(operations.pruneLedger(3_600_000)).rejects.toThrow(/at least a day/);
    expect(await callsLeft()).toEqual(before);
  });

  it('refuses a role that does not own the ledger, before anything goes, dry run or not', async () => {
    const role = `ti_ledger_op_${randomBytes(3).toString('hex')}`;
    await schema.pool.query(`CREATE ROLE "${role}" LOGIN PASSWORD 'operator'`);
    for (const statement of grantStatements({ operator: role }, schema.name)) await schema.pool.query(statement);
    const url = new URL(inject('databaseUrl'));
    url.username = role;
    url.password = 'operator';
    const operator = new pg.Pool({ connectionString: url.toString(), max: 1 });
    try {
      await call(`k-${randomUUID()}`, 40, 40);
      const before = await callsLeft();
      const operations = new ClaimOperations(operator, { schema: schema.name });
      for (const dryRun of [true, false]) {
        await expect(operations.pruneLedger(30 * DAY_MS, { dryRun })).rejects.toThrow(LedgerPruneRefusedError);
        await expect(operations.pruneLedger(30 * DAY_MS, { dryRun })).rejects.toThrow(/prune it as the role that ran migrate/);
      }
      // Nor can it delete the entries itself, though it reads them.
      await expect(operator.query(`DELETE FROM "${schema.name}".ledger`)).rejects.toMatchObject({ code: '42501' });
      expect(await callsLeft()).toEqual(before);
    } finally {
      await operator.end();
      await schema.pool.query(`DROP OWNED BY "${role}" CASCADE`);
      await schema.pool.query(`DROP ROLE "${role}"`);
    }
  });
});
