/** One claim-and-complete cycle through the library's `PostgresClaimStore`. */
import type pg from 'pg';
import { PostgresClaimStore } from '../src/index.js';
import type { PostgresClaimStoreOptions } from '../src/index.js';
import { LEASE_MS, RESULT, nextClaimRequest } from './claim-input.js';

export function storeCycle(options: Pick<PostgresClaimStoreOptions, 'batchStatements'>) {
  return (pool: pg.Pool, schema: string): (() => Promise<void>) => {
    const store = new PostgresClaimStore({ pool, schema, ...options });
    return async () => {
      const begun = await store.begin(nextClaimRequest(), LEASE_MS);
      if (!begun.won) throw new Error(`a fresh random key was already claimed: ${begun.claim.key}`);
      if (!(await store.complete(begun.claim, RESULT))) throw new Error('complete() found no claim');
    };
  };
}
