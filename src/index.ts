/**
 * temporal-idempotency: one activity interceptor that makes every external
 * write at-most-once. Register `idempotencyInterceptors({ store })` on the
 * worker; claims live in Postgres (`PostgresClaimStore`, `migrate`).
 */
export { IdempotencyConfigError, IdempotencyError, InvalidArgumentError } from './errors.js';
export * from './failure-types.js';
export { idempotencyInterceptors } from './worker/registration.js';
export { IdempotencyPlugin, WORKFLOW_INTERCEPTORS_MODULE } from './worker/plugin.js';
export { IdempotentActivityInboundInterceptor } from './worker/interceptor.js';
export { AuditedActivityInboundInterceptor, auditLedgerInterceptors } from './worker/audit-interceptor.js';
export { IdempotencyContextError, idempotencyHeaders, idempotencyKey } from './worker/current-call.js';
export { NotSentError, OutcomeUnknownError } from './worker/errors.js';
export { PayloadCodecContractError } from './worker/result-codec.js';
export type { ActivityIdempotencyOptions, ActivitySettings, AnyActivity, IdempotencyOptions } from './worker/options.js';
export type { ReconcileCall, Reconciler, Reconciliation } from './worker/reconciliation.js';
export type { RefusalDetails } from './worker/refusals.js';
export {
  ClaimChangeRefusedError,
  ClaimContendedError,
  ClaimNotFoundError,
  ClaimOperations,
  InvalidSecretError,
  LedgerPruneRefusedError,
  SecretRequiredError,
  DEFAULT_SCHEMA,
  InvalidIdentifierError,
  PostgresAuditLedger,
  PostgresClaimStore,
  SchemaBeforeBaselineError,
  SchemaNotMigratedError,
  SchemaTooNewError,
  StorePrivilegesMissingError,
  grantScript,
  grantStatements,
  migrate,
} from './store/index.js';
// The store's types, by what they are for: writing a store, writing a ledger, setting Postgres up, operating it.
export type { BeginResult, Claim, ClaimRequest, ClaimState, ClaimStore, HeldClaim, Waiter, WaiterNoted } from './store/index.js';
export type { AuditLedger, LedgerCall, LedgerOutcome } from './store/index.js';
export type { MigrateOptions, MigrateReport, PostgresClaimStoreOptions, StoreLogger, StoreRoles } from './store/index.js';
export type { ChangeRefusal, ClaimSummary, LedgerEntry, ListFilter, PruneCandidateWorkflow, PruneScope, PruneSummary, WorkflowRef } from './store/index.js';
export { InvalidKeyInputError, KEY_FORMAT_VERSION, SCOPES, keyToUuid } from './key/index.js';
export type { Scope } from './key/index.js';
