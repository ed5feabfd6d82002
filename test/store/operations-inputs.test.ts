/**
 * Bad input at ClaimOperations' newer methods (exported, the library's operator API): a
 * `batchSize` of 0 made a signing pass sign nothing (LIMIT 0 ends the pass at once) and report
 * success; a
 * `dryRun` of 0 or 'no' reached Postgres as false and deleted; a horizon of NaN or Infinity
 * failed inside Postgres ("interval out of range"), naming nothing; and `prune(-86_400_000)` put the
 * cutoff a day in the future and deleted every completed claim, the one just recorded too, so
 * a retry or a reset would call again (the CLI refuses such a horizon; the library did not). Each
 * should be refused
 * before anything changes, with an error naming the option.
 */
import { describe, expect, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { ClaimOperations, IdempotencyConfigError, InvalidArgumentError } from '../../src/index.js';
import { claimRequest } from '../support/claims.js';
import { useTestSchema } from '../support/schema.js';

const schema = useTestSchema(import.meta.filename);
const SECRET = 'operations-bad-numbers-secret-of-at-least-32-bytes';

async function signers(): Promise<Array<string | null>> {
  const { rows } = await schema.pool.query<{ secret_id: string | null }>(`SELECT secret_id FROM "${schema.name}".claims`);
  return rows.map((row) => row.secret_id);
}

describe('ClaimOperations refuses bad numbers before changing anything', () => {
  it('prune refuses a horizon that is not a positive, finite number of milliseconds, and deletes nothing', async () => {
    const operations = new ClaimOperations(schema.pool, { schema: schema.name });
    const { claim } = await schema.store.begin(claimRequest(), 60_000);
    await schema.store.complete(claim, defaultPayloadConverter.toPayload({ charged: true }));
    for (const horizon of [-86_400_000, 0, Number.NaN, Number.POSITIVE_INFINITY]) {
      await expect(operations.prune(horizon)).rejects.toThrow(InvalidArgumentError);
      await expect(operations.prune(horizon)).rejects.toThrow(/olderThanMs/);
      await expect(operations.pruneSummary(horizon)).rejects.toThrow(/olderThanMs/);
    }
    expect((await schema.store.get(claim.key))?.state).toBe('completed');
  });

  it('resign({ batchSize: 0 }) names batchSize and signs nothing', async () => {
    await schema.store.begin(claimRequest(), 60_000);
    const before = await signers();
    const operations = new ClaimOperations(schema.pool, { schema: schema.name, secret: SECRET, previousSecrets: ['unsigned'] });
    for (const batchSize of [0, -1, 0.5, Number.NaN]) {
      await expect(operations.resign({ batchSize })).rejects.toThrow(IdempotencyConfigError);
      await expect(operations.resign({ batchSize })).rejects.toThrow(/batchSize/);
    }
    expect(await signers()).toEqual(before);
  });

  it('pruneLedger names a horizon that is not a finite number of milliseconds, and a dryRun that is not a boolean', async () => {
    const operations = new ClaimOperations(schema.pool, { schema: schema.name });
    for (const horizon of [Number.NaN, Number.POSITIVE_INFINITY]) {
      await expect(operations.pruneLedger(horizon)).rejects.toThrow(/olderThanMs/);
    }
    for (const dryRun of [0, 'no', null]) {
      await expect(operations.pruneLedger(30 * 86_400_000, { dryRun: dryRun as unknown as boolean })).rejects.toThrow(IdempotencyConfigError);
      await expect(operations.pruneLedger(30 * 86_400_000, { dryRun: dryRun as unknown as boolean })).rejects.toThrow(/dryRun/);
    }
  });

});
