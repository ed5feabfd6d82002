/**
 * `keys re-sign` signs a row anew only once it checks. A row a writer without the secret edited, one
 * signed by a secret the CLI does not hold, and an unsigned one where signatures are required are
 * left exactly as they are and listed: a fresh MAC would make every worker obey them. A row signed
 * by a distrusted secret is left and listed too, however well it checks. Nothing asserted this: a
 * pass that signed every row it read passed every other test.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { ClaimOperations, PostgresClaimStore } from '../../src/index.js';
import type { PostgresClaimStoreOptions } from '../../src/index.js';
import { RecordSecret } from '../../src/store/record-signing.js';
import { claimRequest } from '../support/claims.js';
import { useTestSchema } from '../support/schema.js';

const schema = useTestSchema(import.meta.filename);
const OLD = 're-sign-test-old-record-secret-of-32-bytes-or-more';
const NEW = 're-sign-test-new-record-secret-of-32-bytes-or-more';
const LEAKED = 're-sign-test-leaked-record-secret-of-32-bytes-or-more';
const NOT_HELD = 're-sign-test-unheld-record-secret-of-32-bytes-or-more';

/** A completed claim, recorded by a worker with `options`; its key. */
async function completedBy(options: Omit<PostgresClaimStoreOptions, 'pool'>): Promise<string> {
  const store = new PostgresClaimStore({ pool: schema.pool, schema: schema.name, ...options });
  const { claim } = await store.begin(claimRequest(), 60_000);
  await store.complete(claim, defaultPayloadConverter.toPayload({ charged: true }));
  return claim.key;
}

async function signatures(): Promise<Map<string, string>> {
  const { rows } = await schema.pool.query<{ key: string; secret_id: string | null; record_mac: string | null }>(
    `SELECT key, secret_id, record_mac FROM "${schema.name}".claims`,
  );
  return new Map(rows.map((row) => [row.key, `${row.secret_id}/${row.record_mac}`]));
}

describe('keys re-sign', () => {
  it('signs anew only the rows that check, and leaves an edited, an unverifiable and a distrusted row as they are', async () => {
    const genuine = await completedBy({ secret: OLD });
    const edited = await completedBy({ secret: OLD });
    await schema.pool.query(`UPDATE "${schema.name}".claims SET outcome_note = 'refunded' WHERE key = $1`, [edited]);
    const notHeld = await completedBy({ secret: NOT_HELD });
    const unsigned = await completedBy({});
    const leaked = await completedBy({ secret: LEAKED });
    const before = await signatures();

    const operations = new ClaimOperations(schema.pool, { schema: schema.name, secret: NEW, previousSecrets: [OLD, LEAKED] });
    const report = await operations.resign({ distrust: [new RecordSecret(LEAKED).id], reason: 'LEAKED leaked' });

    expect({ ...report, unverifiable: [...report.unverifiable].sort() }).toEqual({
      signingSecretId: new RecordSecret(NEW).id,
      resigned: 1,
      rejected: [edited],
      unverifiable: [notHeld, unsigned].sort(),
      distrusted: [leaked],
      changedMeanwhile: 0,
    });
    const after = await signatures();
    for (const key of [edited, notHeld, unsigned, leaked]) expect(after.get(key)).toBe(before.get(key));
    const worker = new PostgresClaimStore({ pool: schema.pool, schema: schema.name, secret: NEW, previousSecrets: [OLD] });
    expect((await worker.get(genuine))?.authenticity).toBe('verified');
    expect((await worker.get(edited))?.authenticity).toBe('rejected');
  });
});
