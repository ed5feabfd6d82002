/**
 * `bench/postgres-cost.ts` runs the store's own statements under pgbench with parameters written by
 * hand: when a statement gains or loses one, the script must follow, or the bench stops (it did: the
 * claim's `audited` parameter left it at "no value for $16") or, worse, measures values in the wrong
 * places.
 */
import { describe, expect, it } from 'vitest';
import { storeScript } from '../../bench/store-script.js';

describe("the bench's pgbench script of the store's statements", () => {
  it('binds every parameter of the claim and the record, and nothing else', () => {
    const script = storeScript('bench_schema');
    expect(script).not.toMatch(/\$\d/);
    expect(script).toContain('\\gset');
  });

  it('binds them in the variants that edit a statement', () => {
    expect(() => storeScript('bench_schema', { claim: (sql) => sql.replace(/RETURNING[\s\S]*$/, 'RETURNING key, token') })).not.toThrow();
  });
});
