/** The claim store: the interface the interceptor needs, and its Postgres implementation. */
export type { BeginResult, Claim, ClaimRequest, ClaimState, ClaimStore, ClaimWatch, HeldClaim } from './claim-store.js';
export { InvalidIdentifierError } from './identifiers.js';
export { DEFAULT_SCHEMA, migrate } from './migrate.js';
export { SchemaNotMigratedError, SchemaTooNewError } from './schema-version.js';
export type { MigrateOptions, MigrateReport } from './migrate.js';
export { PostgresClaimStore } from './postgres-claim-store.js';
export type { PostgresClaimStoreOptions } from './postgres-claim-store.js';
export type { AuditLedger, LedgerCall, LedgerOutcome } from './audit-ledger.js';
export { PostgresAuditLedger } from './postgres-audit-ledger.js';
