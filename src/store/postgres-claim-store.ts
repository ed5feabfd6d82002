/**
 * The claim store on Postgres: one row per key, claimed with a primary-key
 * insert, so two callers can never both win, on one server or many.
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import type { Payload } from '@temporalio/common';
import type {
  BeginResult,
  Claim,
  ClaimRequest,
  ClaimState,
  ClaimStore,
  HeldClaim,
  OutcomeNote,
  Waiter,
  WaiterNoted,
} from './claim-store.js';
import { RecordSigner } from './record-signing.js';
import type { TrustOptions } from './record-signing.js';
import type { AuditLedger } from './audit-ledger.js';
import { PostgresAuditLedger } from './postgres-audit-ledger.js';
import { DEFAULT_SCHEMA, quoteIdentifier } from './identifiers.js';
import { assertWorkerPrivileges } from './worker-privileges.js';
import { SchemaNotMigratedError, assertSchemaUsable } from './schema-version.js';
import { LATEST_MIGRATION } from './migrations/index.js';
import { toClaim } from './claim-row.js';
import type { ClaimRow } from './claim-row.js';
import { storeSql } from './sql/index.js';
import type { StoreSql } from './sql/index.js';
import { checkDurability } from './durability.js';
import { consoleStoreLogger } from './store-logger.js';
import type { StoreLogger } from './store-logger.js';
import { Claiming } from './postgres/claiming.js';
import { Settling } from './postgres/settling.js';
import { STATEMENT_TIMEOUT_MS } from './postgres/context.js';
import type { StoreContext } from './postgres/context.js';
import { KeySalt } from '../key/index.js';
import { errorMessage } from '../error-text.js';
import { IdempotencyConfigError } from '../errors.js';

export interface PostgresClaimStoreOptions extends TrustOptions {
  /**
   * The pool the store queries through. It is the caller's: the store never ends it. The store
   * adds an `error` listener that logs, so an idle connection cut by a Postgres restart cannot
   * crash the process.
   */
  readonly pool: pg.Pool;
  /** Schema that `migrate()` created. Default `temporal_idempotency`. */
  readonly schema?: string;
  /**
   * Send the hot-path statements as named prepared statements. Default true. Turn off behind a
   * pooler that cannot carry them (PgBouncer in transaction mode before 1.21).
   */
  readonly preparedStatements?: boolean;
  /** Where lost connections and failed renewals are reported. Default: the console; `Runtime.instance().logger` sends them where the worker's own logs go. */
  readonly logger?: StoreLogger;
  /**
   * Commit outcomes (complete, release, unknown) synchronously too. Default false: only the claim
   * must be durable before the call, so an outcome's commit does not wait for the WAL flush. An
   * outcome lost in a Postgres crash leaves its claim without one, which is refused (a person checks
   * the vendor); it never lets a call run twice.
   */
  readonly synchronousRecords?: boolean;
  /**
   * Claims (and records) that arrive while four statements are in flight go out together, in one
   * statement and one commit, as soon as one returns; one that finds a slot free goes at once, alone.
   * Default true. False sends each in a statement of its own.
   */
  readonly batchStatements?: boolean;
}

/** What each store reads once, before its first claim. */
interface CheckedSchema {
  readonly keySalt: KeySalt;
}

/**
 * Claim (and record) statements in flight at once; what arrives while all are busy goes together in
 * the next. Four: a handful of callers each go alone, as unbatched, and only more than that queue and
 * batch. With one, eight callers queued behind a single statement and ran at 0.77-0.9x the unbatched
 * store; with four, 0.91-1.0x at eight, and still 1.3x, 2.2x and 3.0x at 16, 32 and 64 callers
 * (docs/measurements.md, "Statements in flight").
 */
export const STATEMENTS_IN_FLIGHT = 4;
/**
 * A statement in flight this long (ten times the p99 of a loaded 2-core server) no longer holds the
 * next one back: one stuck on a half-open connection delays later claims once, not until it dies.
 */
const STALLED_STATEMENT_MS = 500;
/** The most claims (or records) one statement carries. */
const MAX_BATCH = 100;

/** Marks a pool this process already listens on for idle-client errors (on the pool, so no module keeps a list). */
const GUARDED = Symbol.for('temporal-idempotency.pool-guarded');

export class PostgresClaimStore implements ClaimStore {
  readonly schema: string;
  private readonly pool: pg.Pool;
  private readonly sql: StoreSql;
  private readonly logger: StoreLogger;
  private readonly claiming: Claiming;
  private readonly settling: Settling;
  private readonly context: StoreContext;
  private checkedOnce: Promise<CheckedSchema> | undefined;
  private ledger: PostgresAuditLedger | undefined;
  private warnedUnsigned = false;

  constructor(options: PostgresClaimStoreOptions) {
    if (options?.pool == null || typeof options.pool.query !== 'function') {
      throw new IdempotencyConfigError({
        option: 'pool',
        message: 'PostgresClaimStore needs { pool }: a pg.Pool connected to the database migrate() prepared.',
      });
    }
    for (const option of ['synchronousRecords', 'preparedStatements', 'batchStatements'] as const) {
      // By truthiness, 'false' from an environment variable would mean true.
      if (options[option] !== undefined && typeof options[option] !== 'boolean') {
        throw new IdempotencyConfigError({
          option,
          message: `PostgresClaimStore option ${option} must be true or false, got ${JSON.stringify(options[option]) ?? typeof options[option]}.`,
        });
      }
    }
    const pool = options.pool;
    this.pool = pool;
    this.schema = options.schema ?? DEFAULT_SCHEMA;
    this.sql = storeSql(quoteIdentifier('schema', this.schema), { synchronousRecords: options.synchronousRecords ?? false });
    this.logger = options.logger ?? consoleStoreLogger;
    // Named by schema and statement set, so two stores on one pool never share a name for two texts.
    const statementSet = `${this.schema}/${options.synchronousRecords ? 'synchronous' : 'relaxed'}-records`;
    const statementPrefix = options.preparedStatements === false ? null : `ti_${createHash('sha256').update(statementSet).digest('hex').slice(0, 12)}`;
    const signer = new RecordSigner(options);
    this.context = {
      pool,
      sql: this.sql,
      signer,
      logger: this.logger,
      query: (name, text, values, timeoutMs) => runStatement(pool, statementPrefix, name, text, values, timeoutMs),
      claimOf: (row) => this.claimOf(row, signer),
    };
    this.guardPool();
    const batching = {
      maxInFlight: options.batchStatements === false ? Number.POSITIVE_INFINITY : STATEMENTS_IN_FLIGHT,
      maxBatch: options.batchStatements === false ? 1 : MAX_BATCH,
      stalledAfterMs: STALLED_STATEMENT_MS,
    };
    this.settling = new Settling(this.context, batching);
    this.claiming = new Claiming(this.context, batching);
  }

  async keySalt(): Promise<KeySalt> {
    return (await this.checkOnce()).keySalt;
  }

  async begin(request: ClaimRequest, leaseMs: number): Promise<BeginResult> {
    await this.checkOnce();
    return this.claiming.begin(request, leaseMs, (key) => this.get(key));
  }

  async get(key: string): Promise<Claim | null> {
    const { rows } = await this.context.query<ClaimRow>('get', this.sql.claims.get, [key], STATEMENT_TIMEOUT_MS);
    return rows[0] ? this.context.claimOf(rows[0]) : null;
  }

  complete(claim: Claim, result: Payload): Promise<boolean> {
    return this.settling.complete(claim, result);
  }

  release(claim: Claim): Promise<boolean> {
    return this.settling.release(claim);
  }

  markUnknown(claim: Claim, note: OutcomeNote): Promise<boolean> {
    return this.settling.markUnknown(claim, note);
  }

  handBack(taken: Claim, orphan: Claim, note: OutcomeNote): Promise<boolean> {
    return this.settling.handBack(taken, orphan, note);
  }

  takeOver(orphan: Claim, request: ClaimRequest, leaseMs: number, note?: OutcomeNote): Promise<Claim | null> {
    return this.settling.takeOver(orphan, request, leaseMs, note);
  }

  waitersToTell(claim: HeldClaim): Promise<readonly Waiter[]> {
    return this.settling.waitersToTell(claim);
  }

  async addWaiter(waiter: Waiter): Promise<WaiterNoted> {
    const { rows } = await this.pool.query<{ state: ClaimState | null }>({ text: this.sql.waiters.add, query_timeout: STATEMENT_TIMEOUT_MS, values: [
      waiter.key,
      waiter.namespace,
      waiter.workflowId,
      waiter.runId,
      waiter.activityType,
    ] } as pg.QueryConfig);
    return { claimState: rows[0]?.state ?? null };
  }

  async waitersTold(key: string, waiters: readonly Pick<Waiter, 'namespace' | 'workflowId'>[]): Promise<void> {
    if (waiters.length === 0) return;
    await this.pool.query({
      text: this.sql.waiters.told,
      query_timeout: STATEMENT_TIMEOUT_MS,
      values: [key, waiters.map((waiter) => waiter.namespace), waiters.map((waiter) => waiter.workflowId)],
    } as pg.QueryConfig);
  }

  auditLedger(): AuditLedger {
    return (this.ledger ??= new PostgresAuditLedger(this.pool, this.schema));
  }

  /**
   * Bounded by `timeoutMs` (a third of the lease, at least 2 s so a busy server is not mistaken for a
   * dead one): a renewal stuck on a half-open socket must not hold up the next one.
   */
  async renewLeases(claims: readonly HeldClaim[], leaseMs: number, timeoutMs = Math.max(leaseMs / 3, 2_000)): Promise<readonly string[]> {
    if (claims.length === 0) return [];
    const { rows } = await this.context.query<{ token: string }>(
      'renew',
      this.sql.claims.renew,
      [claims.map((claim) => claim.key), claims.map((claim) => claim.token), leaseMs],
      timeoutMs,
    );
    return rows.map((row) => row.token);
  }

  /**
   * The row as a claim, its signature checked. A worker without a record secret that meets a signed row
   * is in a deployment that signs: it refuses those rows, and obeys unsigned ones anyone could write.
   * Said once, so a secret left out of a worker's settings is found.
   */
  private claimOf(row: ClaimRow, signer: RecordSigner): Claim {
    const claim = toClaim(row, signer);
    if (claim.signedBy !== null && signer.signingSecretId === null && !this.warnedUnsigned) {
      this.warnedUnsigned = true;
      this.logger.warn(
        `Idempotency: this worker has no record secret, but records in schema ${this.schema} are signed (by secret ` +
          `${claim.signedBy}): it refuses them, and obeys unsigned rows, which anyone who can write the table can make. ` +
          'Give it the deployment\'s secret.',
        { schema: this.schema, signedBy: claim.signedBy },
      );
    }
    return claim;
  }

  /**
   * Once per store: a missing or outdated schema is reported by name rather than as a failed
   * insert, a role that could claim but not settle before any claim, a server that could lose a
   * committed claim before the first call; and the key salt is read.
   */
  private checkOnce(): Promise<CheckedSchema> {
    this.checkedOnce ??= withinStatementTimeout(async () => {
      await assertSchemaUsable(this.pool, this.schema);
      await assertWorkerPrivileges(this.pool, this.schema, quoteIdentifier('schema', this.schema));
      await checkDurability(this.pool, this.logger);
      const { rows } = await this.pool.query<{ key_salt: Buffer }>(this.sql.keySalt);
      if (!rows[0]) throw new SchemaNotMigratedError(this.schema, LATEST_MIGRATION, 'its settings row, which keeps the key salt, is gone');
      return { keySalt: new KeySalt(rows[0].key_salt) };
    }).catch((error: unknown) => {
      this.checkedOnce = undefined; // unreachable now may be reachable later
      throw error;
    });
    return this.checkedOnce;
  }

  /**
   * Without a listener, node-postgres turns an idle client's error (a Postgres restart, a cut
   * connection) into an uncaught exception that ends the worker, and every claim it held becomes
   * a refusal. Like graphile-worker with pools handed to it, log instead; the pool replaces the client.
   */
  private guardPool(): void {
    const pool = this.pool as pg.Pool & { [GUARDED]?: true };
    if (pool[GUARDED] || typeof pool.on !== 'function') return;
    pool[GUARDED] = true;
    pool.on('error', (error) => this.logger.warn('Idempotency: an idle Postgres connection failed; the pool replaces it', { error: errorMessage(error) }));
  }
}

/**
 * Runs a statement by name, so each connection parses and plans it once (about a third less
 * Postgres CPU per claim than sending the text each time). Names carry the schema's hash, so
 * two stores on one pool never share one.
 */
function runStatement<R extends pg.QueryResultRow>(
  pool: pg.Pool,
  prefix: string | null,
  name: string,
  text: string,
  values: unknown[],
  timeoutMs?: number,
): Promise<pg.QueryResult<R>> {
  const config: pg.QueryConfig & { query_timeout?: number } = prefix ? { name: `${prefix}_${name}`, text, values } : { text, values };
  if (timeoutMs !== undefined) config.query_timeout = Math.max(1, Math.round(timeoutMs));
  return pool.query<R>(config);
}

/**
 * The store's checks, read once and cached: stuck on a connection a partition left silent, they would
 * hold every later attempt on the store. Given up as one statement would be, they are read again by
 * the next attempt.
 */
function withinStatementTimeout<T>(checks: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the store's checks got no answer from Postgres in ${STATEMENT_TIMEOUT_MS / 1000} s`)), STATEMENT_TIMEOUT_MS);
  });
  return Promise.race([checks(), timedOut]).finally(() => clearTimeout(timer));
}
