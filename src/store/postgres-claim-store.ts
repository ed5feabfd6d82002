/**
 * The claim store on Postgres: one row per key, claimed with a primary-key
 * insert, so two callers can never both win, on one server or many.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Payload } from '@temporalio/common';
import type {
  BeginResult,
  Claim,
  ClaimRequest,
  ClaimState,
  ClaimStore,
  ClaimWatch,
  HeldClaim,
  KeyFormats,
  OutcomeNote,
  Waiter,
} from './claim-store.js';
import { RecordAuthentication } from './record-authentication.js';
import type { TrustOptions } from './record-authentication.js';
import { ClaimListener } from './claim-listener.js';
import type { AuditLedger } from './audit-ledger.js';
import { PostgresAuditLedger } from './postgres-audit-ledger.js';
import { DEFAULT_SCHEMA, outcomeChannel, quoteIdentifier } from './identifiers.js';
import { assertSchemaCurrent } from './schema-version.js';
import { payloadToJson } from './payload-json.js';
import type { PayloadJson } from './payload-json.js';
import { toClaim } from './claim-row.js';
import type { ClaimRow } from './claim-row.js';
import { claimStatements } from './claim-statements.js';
import type { ClaimStatements } from './claim-statements.js';
import { checkDurability } from './durability.js';
import { pgText } from './pg-text.js';
import { defaultStoreLogger } from './store-logger.js';
import type { StoreLogger } from './store-logger.js';
import { sha256Hex } from '../key/index.js';
import { retryFor } from '../bounded-retry.js';

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
  /** Where lost connections and failed renewals are reported. Default: the worker's Runtime logger, else the console. */
  readonly logger?: StoreLogger;
}

const BEGIN_ATTEMPTS = 3;
/** pools this process already listens on for idle-client errors */
const guardedPools = new WeakSet<pg.Pool>();

export class PostgresClaimStore implements ClaimStore {
  readonly schema: string;
  private readonly pool: pg.Pool;
  private readonly statements: ClaimStatements;
  /** NOTIFY channel for outcomes in this schema; truncated like any Postgres identifier. */
  private readonly channel: string;
  private readonly listener: ClaimListener;
  private readonly logger: StoreLogger;
  /** Null when prepared statements are off. */
  private readonly statementPrefix: string | null;
  private checkedOnce: Promise<void> | undefined;
  private ledger: PostgresAuditLedger | undefined;
  private readonly authentication: RecordAuthentication;

  constructor(options: PostgresClaimStoreOptions) {
    if (options?.pool == null || typeof options.pool.query !== 'function') {
      throw new TypeError('PostgresClaimStore needs { pool }: a pg.Pool connected to the database migrate() prepared.');
    }
    this.pool = options.pool;
    this.schema = options.schema ?? DEFAULT_SCHEMA;
    const quotedSchema = quoteIdentifier('schema', this.schema);
    this.statements = claimStatements(`${quotedSchema}.claims`, `${quotedSchema}.waiters`);
    this.channel = outcomeChannel(this.schema);
    this.logger = options.logger ?? defaultStoreLogger;
    this.authentication = new RecordAuthentication(options);
    this.listener = new ClaimListener(connectionConfigOf(this.pool), this.channel, this.logger);
    this.statementPrefix = options.preparedStatements === false ? null : `ti_${sha256Hex(this.schema).slice(0, 12)}`;
    this.guardPool();
  }

  /** How keys and fingerprints are hashed: keyed with the secret when one is given. */
  get keyFormats(): KeyFormats {
    return this.authentication.keyFormats;
  }

  async begin(request: ClaimRequest, leaseMs: number): Promise<BeginResult> {
    await this.checkOnce();
    // A claim can be released between our failed insert and our read; then we simply try again.
    for (let attempt = 1; attempt <= BEGIN_ATTEMPTS; attempt++) {
      const inserted = await this.insertOrUndo(request, leaseMs);
      if (inserted) return { won: true, claim: inserted };
      // A separate statement, not a CTE: only a new snapshot sees a row a concurrent caller just committed.
      const existing = await this.firstClaimOf(request);
      if (existing) return { won: false, claim: existing };
    }
    throw new Error(`Key ${request.key} was claimed and released ${BEGIN_ATTEMPTS} times while we tried to claim it.`);
  }

  async get(key: string): Promise<Claim | null> {
    const { rows } = await this.query<ClaimRow>('get', this.statements.get, [key]);
    return rows[0] ? toClaim(rows[0], this.authentication) : null;
  }

  async complete(claim: HeldClaim, result: Payload): Promise<boolean> {
    const json = payloadToJson(result);
    const [keys, token, channel, macs] = this.rowsOf(claim, 'completed', json);
    return this.settle('complete', this.statements.complete, [keys, token, channel, json, macs]);
  }

  async release(claim: HeldClaim): Promise<boolean> {
    return this.settle('release', this.statements.release, [keysOf(claim), claim.token, this.channel]);
  }

  async markUnknown(claim: HeldClaim, note: OutcomeNote): Promise<boolean> {
    const [keys, token, channel, macs] = this.rowsOf(claim, 'unknown', null);
    return this.settle('mark_unknown', this.statements.markUnknown, [
      keys,
      token,
      channel,
      pgText(note.summary),
      macs,
      note.detail ? payloadToJson(note.detail) : null,
    ]);
  }

  async takeOver(orphan: Claim, request: ClaimRequest, leaseMs: number): Promise<Claim | null> {
    const mac = this.authentication.sign({ ...orphan, state: 'claimed', result: null });
    const { rows } = await this.pool.query<ClaimRow>(this.statements.takeOver, [
      orphan.key,
      orphan.token,
      randomUUID(),
      request.attempt,
      request.claimedBy,
      leaseMs,
      request.workflowId,
      request.runId,
      request.activityId,
      request.deadlineMs,
      mac,
    ]);
    return rows[0] ? toClaim(rows[0], this.authentication) : null;
  }

  async addWaiter(waiter: Waiter): Promise<void> {
    await this.pool.query(this.statements.addWaiter, [waiter.key, waiter.namespace, waiter.workflowId, waiter.runId, waiter.activityType]);
  }

  auditLedger(): AuditLedger {
    return (this.ledger ??= new PostgresAuditLedger(this.pool, this.schema));
  }

  /** Bounded by `timeoutMs`: a renewal stuck on a half-open socket must not hold up the next one. */
  async renewLeases(claims: readonly HeldClaim[], leaseMs: number, timeoutMs = leaseMs / 3): Promise<readonly string[]> {
    if (claims.length === 0) return [];
    const keys = claims.flatMap((claim) => keysOf(claim));
    const tokens = claims.flatMap((claim) => keysOf(claim).map(() => claim.token));
    const { rows } = await this.query<{ token: string }>('renew', this.statements.renew, [keys, tokens, leaseMs], timeoutMs);
    return [...new Set(rows.map((row) => row.token))];
  }

  async watch(key: string): Promise<ClaimWatch> {
    const follow = await this.listener.follow(key);
    const listener = this.listener;
    let marked = false;
    return {
      current: () => {
        if (marked) return this.get(key);
        marked = true; // the first read also flags the claim as awaited, so that its outcome is announced
        return this.markAwaited(key);
      },
      changed: follow.changed,
      get notifying() {
        return listener.notifying;
      },
      close: follow.close,
    };
  }

  /** Closes the store's own LISTEN connection (the pool stays the caller's). */
  async close(): Promise<void> {
    await this.listener.stop();
  }

  /** Runs a statement that settles the caller's own claim and, if someone waits for it, wakes them. */
  private async settle(name: string, statement: string, params: unknown[]): Promise<boolean> {
    const { rowCount } = await this.query(name, statement, params);
    return (rowCount ?? 0) > 0;
  }

  /** Reads the claim and flags it as awaited, so that its outcome is announced. */
  private async markAwaited(key: string): Promise<Claim | null> {
    const { rows } = await this.pool.query<ClaimRow>(this.statements.markAwaited, [key]);
    return rows[0] ? toClaim(rows[0], this.authentication) : null;
  }

  /** The claim holding the request's key, or else one of its aliases. */
  private async firstClaimOf(request: ClaimRequest): Promise<Claim | null> {
    if (request.aliases.length === 0) return this.get(request.key);
    const keys = [request.key, ...request.aliases.map((alias) => alias.key)];
    const { rows } = await this.query<ClaimRow>('get_first', this.statements.getFirst, [keys]);
    return rows[0] ? toClaim(rows[0], this.authentication) : null;
  }

  /** `[keys, token, channel, macs]` of a claim's rows in `state`, each row signed for its own key. */
  private rowsOf(claim: HeldClaim, state: ClaimState, result: PayloadJson | null): [string[], string, string, (string | null)[]] {
    const rows = [{ key: claim.key, fingerprint: claim.fingerprint }, ...claim.aliases];
    const macs = rows.map((row) => this.authentication.sign({ namespace: claim.namespace, ...row, state, result }));
    return [rows.map((row) => row.key), claim.token, this.channel, macs];
  }

  /**
   * The caller is told the claim failed, so it will not call; but the INSERT may have committed
   * before the connection dropped. Undo it by token, or a later attempt would refuse a call
   * that never happened. If Postgres is gone entirely the undo fails too, and the claim's
   * lapsed lease makes later attempts refuse: safe, if not ideal.
   */
  private async insertOrUndo(request: ClaimRequest, leaseMs: number): Promise<Claim | null> {
    const token = randomUUID();
    try {
      return await this.insertClaim(request, token, leaseMs);
    } catch (error) {
      // Postgres may be restarting: keep trying in the background, for as long as the lease would keep
      // a retry waiting, so that retry finds the key free instead of a claim it must refuse.
      void retryFor(leaseMs * 2, () => this.pool.query(this.statements.undoClaim, [requestKeys(request), token])).catch((undoError: unknown) =>
        this.logger.warn('Idempotency: could not undo a claim whose insert may have committed; a retry will find it and refuse', {
          idempotencyKey: request.key,
          error: undoError instanceof Error ? undoError.message : String(undoError),
        }),
      );
      throw error;
    }
  }

  /** The claim when this caller won every key of the action; else null, with nothing of ours left behind. */
  private async insertClaim(request: ClaimRequest, token: string, leaseMs: number): Promise<Claim | null> {
    const rows = [{ key: request.key, fingerprint: request.fingerprint }, ...request.aliases];
    const formats = [this.keyFormats.current, ...this.keyFormats.previous].map((format) => format.version);
    const macs = rows.map((row) => this.authentication.sign({ namespace: request.namespace, ...row, state: 'claimed', result: null }));
    const identity = [request.namespace, request.activityType, request.workflowId, request.runId, request.activityId, request.attempt, request.claimedBy];
    if (rows.length === 1) {
      const { rows: inserted } = await this.query<ClaimRow>('claim', this.statements.claim, [
        request.key, token, request.fingerprint, ...identity, leaseMs, request.deadlineMs, macs[0], formats[0],
      ]);
      return inserted[0] ? toClaim(inserted[0], this.authentication) : null;
    }
    const { rows: inserted } = await this.query<ClaimRow>('claim_aliases', this.statements.claimWithAliases, [
      rows.map((row) => row.key), token, rows.map((row) => row.fingerprint), ...identity, leaseMs, request.deadlineMs, macs,
      rows.map((_, index) => formats[Math.min(index, formats.length - 1)]),
    ]);
    const primary = inserted.find((row) => row.key === request.key);
    if (inserted.length === rows.length && primary) return { ...toClaim(primary, this.authentication), aliases: request.aliases };
    // Someone holds one of the keys: this is their action, not ours to run. Take ours back.
    if (inserted.length > 0) await this.pool.query(this.statements.undoClaim, [inserted.map((row) => row.key), token]);
    return null;
  }

  /**
   * Runs a statement by name, so each connection parses and plans it once (about a third less
   * Postgres CPU per claim than sending the text each time). Names carry the schema's hash, so
   * two stores on one pool never share one.
   */
  private query<R extends pg.QueryResultRow>(
    name: string,
    text: string,
    values: unknown[],
    timeoutMs?: number,
  ): Promise<pg.QueryResult<R>> {
    const config: pg.QueryConfig & { query_timeout?: number } = this.statementPrefix
      ? { name: `${this.statementPrefix}_${name}`, text, values }
      : { text, values };
    if (timeoutMs !== undefined) config.query_timeout = Math.max(1, Math.round(timeoutMs));
    return this.pool.query<R>(config);
  }

  /**
   * Once per store: a missing or outdated schema is reported by name rather than as a failed
   * insert, and a server that could lose a committed claim is reported before the first call.
   */
  private checkOnce(): Promise<void> {
    this.checkedOnce ??= (async () => {
      await assertSchemaCurrent(this.pool, this.schema);
      await checkDurability(this.pool, this.logger);
    })().catch((error: unknown) => {
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
    if (guardedPools.has(this.pool) || typeof this.pool.on !== 'function') return;
    guardedPools.add(this.pool);
    this.pool.on('error', (error) =>
      this.logger.warn('Idempotency: an idle Postgres connection failed; the pool replaces it', { error: error.message }),
    );
  }
}

function keysOf(claim: HeldClaim): string[] {
  return [claim.key, ...claim.aliases.map((alias) => alias.key)];
}

function requestKeys(request: ClaimRequest): string[] {
  return [request.key, ...request.aliases.map((alias) => alias.key)];
}

/**
 * What the store's own LISTEN connection connects with: the pool's settings, with a connect timeout
 * and TCP keepalive, so a connection that a failover left half-open is noticed and replaced.
 */
function connectionConfigOf(pool: pg.Pool): pg.ClientConfig {
  const options = (pool as unknown as { options?: pg.ClientConfig }).options ?? {};
  return { ...options, connectionTimeoutMillis: options.connectionTimeoutMillis || 5_000, keepAlive: true };
}
