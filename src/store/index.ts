/** The claim store: the interface the interceptor needs, and its Postgres implementation. */
// Every type of the interface, as it is: a new one there is exported here without a second list to keep.
export type * from './claim-store.js';
export { InvalidSecretError, MIN_SECRET_BYTES, RecordSigner, secretIds } from './record-signing.js';
export { ClaimContendedError } from './claim-contended.js';
export type { PreviousSecret, SecretMaterial, TrustOptions } from './record-signing.js';
export type { StoreLogger } from './store-logger.js';
export { DEFAULT_SCHEMA, InvalidIdentifierError } from './identifiers.js';
export { migrate } from './migrate.js';
export { setStatementTimeout } from './session-settings.js';
export { grantScript, grantStatements } from './roles.js';
export type { StoreRoles } from './roles.js';
export { SchemaBeforeBaselineError, SchemaNotMigratedError, SchemaTooNewError } from './schema-version.js';
export { StorePrivilegesMissingError } from './worker-privileges.js';
export type { MigrateOptions, MigrateReport } from './migrate.js';
export { PostgresClaimStore } from './postgres-claim-store.js';
export type { PostgresClaimStoreOptions } from './postgres-claim-store.js';
export type { AuditLedger, LedgerCall, LedgerError, LedgerOutcome, ReconcileOutcome } from './audit-ledger.js';
export { PostgresAuditLedger } from './postgres-audit-ledger.js';
export { ClaimOperations } from './claim-operations.js';
export { CLAIM_STATES } from './operator/types.js';
export { LedgerPruneRefusedError } from './operator/pruning.js';
export type { ResigningReport, SignerCount } from './operator/resigning.js';
export type {
  ChangeOptions,
  ClaimOperationsOptions,
  ClaimSummary,
  LedgerEntry,
  LedgerFilter,
  ListFilter,
  OperatorAction,
  PruneCandidateWorkflow,
  PruneScope,
  PruneSummary,
  WorkflowRef,
} from './operator/types.js';
export { ClaimChangeRefusedError, ClaimNotFoundError, SecretRequiredError, changeRefusal } from './operator-errors.js';
export type { ChangeRefusal } from './operator-errors.js';
