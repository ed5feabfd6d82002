/**
 * temporal-idempotency/testing: for users' unit tests. An in-memory claim
 * store with the Postgres store's semantics (held to the same behavioural
 * suite), leases on a clock the test moves, and an activity environment that
 * runs activities under the interceptor, so `idempotencyKey()` works and a
 * repeat is answered from the record. Never for a real worker: nothing here
 * is durable or shared between processes.
 */
export { InMemoryClaimStore } from './in-memory-claim-store.js';
export type { InMemoryClaimStoreOptions } from './in-memory-claim-store.js';
export { InMemoryAuditLedger } from './in-memory-audit-ledger.js';
export type { LedgerCallSummary, LedgerRecord } from './in-memory-audit-ledger.js';
export { ManualClock, systemClock } from './clock.js';
export type { Clock } from './clock.js';
export { IdempotentActivityEnvironment } from './activity-environment.js';
export type { AttemptInfo, IdempotentActivityEnvironmentOptions } from './activity-environment.js';
