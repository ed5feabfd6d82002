/**
 * Only the claim waits for the WAL flush: each statement sets its own
 * transaction's synchronous_commit, which is what the commit obeys. Checked
 * inside an open transaction on real Postgres, whatever the session's default.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { claimsSql } from '../../src/store/sql/index.js';
import { useTestSchema } from '../support/schema.js';

const schema = useTestSchema(import.meta.filename);

/** Runs `text` in a transaction that is rolled back, and returns the synchronous_commit its commit would have used. */
async function commitSettingAfter(text: string, values: unknown[], sessionDefault: 'on' | 'off'): Promise<string> {
  const client = await schema.pool.connect();
  try {
    await client.query(`SET synchronous_commit = ${sessionDefault}`);
    await client.query('BEGIN');
    await client.query(text, values);
    const { rows } = await client.query<{ synchronous_commit: string }>('SHOW synchronous_commit');
    return rows[0]!.synchronous_commit;
  } finally {
    await client.query('ROLLBACK');
    await client.query('RESET synchronous_commit');
    client.release();
  }
}

function statements(synchronousRecords: boolean) {
  const s = `"${schema.name}"`;
  return claimsSql(s, { synchronousRecords });
}

const claimValues = () => [randomUUID().replace(/-/g, ''), randomUUID(), 'fp', 'default', 'send', 'wf', null, '1', 1, 'test/1', 30_000, null, null, null, null, false];

/** A real claim to settle (a statement that settles nothing commits nothing, durable or not). */
async function claimed(): Promise<[string, string]> {
  const { rows } = await schema.pool.query<{ key: string; token: string }>(statements(true).claim, claimValues());
  return [rows[0]!.key, rows[0]!.token];
}

describe('commit durability', () => {
  it('the claim always waits for the flush, even where the session says not to', async () => {
    expect(await commitSettingAfter(statements(false).claim, claimValues(), 'off')).toBe('on');
  });

  it('a batch of claims waits for it too', async () => {
    const columns = [claimValues(), claimValues()];
    const values = columns[0]!.map((_, index) => columns.map((claim) => claim[index]));
    expect(await commitSettingAfter(statements(false).claimBatch, values, 'off')).toBe('on');
  });

  it('a batch of records does not wait for it by default, and does with synchronousRecords', async () => {
    const claims = [await claimed(), await claimed()];
    const values = [claims.map(([key]) => key), claims.map(([, token]) => token), claims.map(() => ({ metadata: {}, data: '' })), [null, null], [null, null]];
    expect(await commitSettingAfter(statements(false).completeBatch, values, 'on')).toBe('off');
    expect(await commitSettingAfter(statements(true).completeBatch, values, 'off')).toBe('on');
  });

  it('outcomes do not wait for it by default, and do with synchronousRecords, whatever the session says', async () => {
    for (const name of ['complete', 'release', 'markUnknown'] as const) {
      const values = (claim: [string, string]) =>
        name === 'release'
          ? [...claim]
          : name === 'markUnknown'
            ? [...claim, 'note', null, null, null]
            : [...claim, { metadata: {}, data: '' }, null, null];
      const claim = await claimed();
      expect(await commitSettingAfter(statements(false)[name], values(claim), 'on'), name).toBe('off');
      expect(await commitSettingAfter(statements(true)[name], values(claim), 'off'), name).toBe('on');
    }
  });
});
