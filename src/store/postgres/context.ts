/** What the parts of the Postgres claim store share: the pool, the statements, the signer, how a row becomes a claim. */
import type pg from 'pg';
import type { Claim } from '../claim-store.js';
import type { ClaimRow } from '../claim-row.js';
import type { RecordSigner } from '../record-signing.js';
import type { StoreSql } from '../sql/index.js';
import type { StoreLogger } from '../store-logger.js';

export interface StoreContext {
  readonly pool: pg.Pool;
  readonly sql: StoreSql;
  readonly signer: RecordSigner;
  readonly logger: StoreLogger;
  /** Runs a hot-path statement by name (a named prepared statement unless those are off). */
  query<R extends pg.QueryResultRow>(name: string, text: string, values: unknown[], timeoutMs?: number): Promise<pg.QueryResult<R>>;
  /** The row as a claim, its signature checked. */
  claimOf(row: ClaimRow): Claim;
}

/**
 * How long the worker waits for the answer of a statement that settles a call (a record, an outcome,
 * a release), takes over an orphan, reads a claim or notes its waiters. One whose bytes a partition lost is never answered (pg sets no timeout,
 * and a silent connection stays open), and the attempt behind it would hold its slot, and its record,
 * until the process ends; given up, it is tried again on a fresh connection, as every settling write
 * already is when its answer is lost. A claim is not bounded so: given up while its backend waits on
 * a lock, it would commit later under a token nobody holds, and refuse a call that was never made.
 */
export const STATEMENT_TIMEOUT_MS = 10_000;
