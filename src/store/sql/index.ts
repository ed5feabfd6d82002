/**
 * The store's SQL, a module per table, the workers' and the operators' statements side by side.
 * `schema` is an already-quoted identifier; every value is a `$n`.
 */
import { claimsSql } from './claims.js';
import { ledgerSql } from './ledger.js';
import { operatorTrailSql } from './operator-trail.js';
import { waitersSql } from './waiters.js';

export type StoreSql = ReturnType<typeof storeSql>;

export function storeSql(schema: string, options: { readonly synchronousRecords?: boolean } = {}) {
  return {
    claims: claimsSql(schema, options),
    waiters: waitersSql(schema),
    ledger: ledgerSql(schema),
    trail: operatorTrailSql(schema),
    // The key salt, read once by each store and by the CLI.
    keySalt: `SELECT key_salt FROM ${schema}.settings`,
  };
}

export { claimsSql } from './claims.js';
export type { ClaimsSql } from './claims.js';
