/**
 * Bad input at the store's options: `synchronousRecords` (new) and `preparedStatements` took any
 * value by truthiness, so `synchronousRecords: 'false'` (a value read from the environment)
 * silently made every outcome wait for the flush, and `synchronousRecords: 0` silently did not,
 * where the worker's own options refuse a non-boolean with an error naming it.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { IdempotencyConfigError, PostgresClaimStore } from '../../src/index.js';

describe('PostgresClaimStore boolean options', () => {
  const pool = new pg.Pool({ connectionString: 'postgres://nobody@127.0.0.1:1/none' });
  for (const option of ['synchronousRecords', 'preparedStatements'] as const) {
    for (const value of ['false', 0, 1, null]) {
      it(`refuses ${option}: ${JSON.stringify(value)}, naming the option`, () => {
        const store = () => new PostgresClaimStore({ pool, [option]: value as unknown as boolean });
        expect(store).toThrow(IdempotencyConfigError);
        expect(store).toThrow(new RegExp(`option ${option} must be true or false`));
      });
    }
    it(`accepts ${option}: true, false and leaving it out`, () => {
      for (const value of [true, false, undefined]) expect(() => new PostgresClaimStore({ pool, [option]: value })).not.toThrow();
    });
  }
});
