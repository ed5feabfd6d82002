/**
 * temporal-idempotency: one activity interceptor that makes every external
 * write at-most-once. Register `idempotencyInterceptors({ store })` on the
 * worker; claims live in Postgres (`PostgresClaimStore`, `migrate`).
 */
export { IdempotencyError } from './errors.js';
export * from './failure-types.js';
export { idempotencyInterceptors } from './worker/registration.js';
export { IdempotencyPlugin, WORKFLOW_INTERCEPTORS_MODULE } from './worker/plugin.js';
export { IdempotentActivityInbound, IdempotentActivityInboundInterceptor } from './worker/interceptor.js';
export { AuditedActivityInbound, AuditedActivityInboundInterceptor, auditLedgerInterceptors } from './worker/audit-interceptor.js';
export { IdempotencyContextError, idempotencyHeaders, idempotencyKey } from './worker/current-call.js';
export { IdempotencyConfigError, NotSentError, OutcomeUnknownError } from './worker/errors.js';
export type { ActivityIdempotencyOptions, ActivitySettings, AnyActivity, IdempotencyOptions } from './worker/options.js';
export type { ReconcileCall, Reconciler, Reconciliation } from './worker/reconciliation.js';
export type { RefusalDetails } from './worker/refusals.js';
export {
  ClaimChangeRefusedError,
  ClaimNotFoundError,
  ClaimOperations,
  KeyFormatChangedError,
  KeyFormatUnavailableError,
  SecretRequiredError,
  DEFAULT_SCHEMA,
  InvalidIdentifierError,
  PostgresAuditLedger,
  PostgresClaimStore,
  SchemaNotMigratedError,
  SchemaTooNewError,
  grantScript,
  grantStatements,
  migrate,
} from './store/index.js';
export type {
  AuditLedger,
  BeginResult,
  Claim,
  ClaimRequest,
  ClaimState,
  ClaimStore,
  ClaimWatch,
  HeldClaim,
  LedgerCall,
  LedgerOutcome,
  MigrateOptions,
  MigrateReport,
  PostgresClaimStoreOptions,
  StoreLogger,
  Waiter,
  ChangeRefusal,
  ClaimSummary,
  LedgerEntry,
  ListFilter,
  PruneSummary,
  StoreRoles,
} from './store/index.js';
export { InvalidKeyInputError, KEY_FORMAT_VERSION, SCOPES, keyToUuid } from './key/index.js';
export type { Scope } from './key/index.js';
