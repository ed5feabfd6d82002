/**
 * `npm run bench` holds the store to a baseline that sends the store's own claim and record
 * statements straight through a pool (bench/baseline-cycle.ts). Its parameters are written there by
 * hand: when a statement gains one, the baseline must too, or the bench fails after its first
 * minutes (it did, once a claim recorded whether a ledger covers it).
 */
import { describe, expect, it } from 'vitest';
import { baselineCycle } from '../../bench/baseline-cycle.js';
import { useTestSchema } from '../support/schema.js';

const schema = useTestSchema(import.meta.filename);

describe("the bench's direct-SQL baseline", () => {
  it("sends the store's claim and record statements with the parameters they take", async () => {
    const cycle = baselineCycle(schema.pool, schema.name);
    await cycle();
    await cycle();
    const { rows } = await schema.pool.query(`SELECT state FROM "${schema.name}".claims`);
    expect(rows).toEqual([{ state: 'completed' }, { state: 'completed' }]);
  });
});
