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
  OutcomeNote,
  Waiter,
  WaiterNoted,
} from './claim-store.js';
import { RecordSigner } from './record-signing.js';
import type { SignedFields, TrustOptions } from './record-signing.js';
import { ClaimContendedError } from './claim-contended.js';
import { ClaimUndo } from './claim-undo.js';
import { ClaimListener } from './claim-listener.js';
import type { AuditLedger } from './audit-ledger.js';
import { PostgresAuditLedger } from './postgres-audit-ledger.js';
import { DEFAULT_SCHEMA, outcomeChannel, quoteIdentifier } from './identifiers.js';
import { assertWorkerPrivileges } from './worker-privileges.js';
import { SchemaNotMigratedError, assertSchemaUsable } from './schema-version.js';
import { LATEST_MIGRATION } from './migrations/index.js';
import { payloadToJson } from './payload-json.js';
import { toClaim } from './claim-row.js';
import type { ClaimRow } from './claim-row.js';
import { claimStatements } from './claim-statements.js';
import { NaturalBatch, settle } from './natural-batch.js';
import type { Settled } from './natural-batch.js';
import type { PayloadJson } from './payload-json.js';
import type { ClaimStatements } from './claim-statements.js';
import { checkDurability } from './durability.js';
import { pgText } from './pg-text.js';
import { defaultStoreLogger } from './store-logger.js';
import type { StoreLogger } from './store-logger.js';
import { KeySalt } from '../key/index.js';
import { createHash } from 'node:crypto';
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
  /** Where lost connections and failed renewals are reported. Default: the worker's Runtime logger, else the console. */
  readonly logger?: StoreLogger;
  /**
   * Commit outcomes (complete, release, unknown) synchronously too. Default false: only the claim
   * must be durable before the call, so an outcome's commit does not wait for the WAL flush. An
   * outcome lost in a Postgres crash leaves its claim without one, which is refused (a person checks
   * the vendor); it never lets a call run twice.
   */
  readonly synchronousRecords?: boolean;
  /**
   * Claims (and records) that arrive while an earlier one is still in flight go out together, in one
   * statement and one commit, as soon as a statement returns; one that finds a statement free goes at
   * once, alone. Default true. False sends each in a statement of its own.
   */
  readonly batchStatements?: boolean;
}

/** A claim to insert, with its lease. */
interface PendingClaim {
  readonly request: ClaimRequest;
  readonly leaseMs: number;
}

/** A result to record, signed. */
interface PendingRecord {
  readonly claim: Claim;
  readonly result: PayloadJson;
  readonly mac: string | null;
  readonly secretId: string | null;
}

/** What each store reads once, before its first claim. */
interface CheckedSchema {
  readonly keySalt: KeySalt;
}

const BEGIN_ATTEMPTS = 3;
/**
 * Claim (and record) statements in flight at once, each carrying whatever arrived meanwhile: one, so
 * that under load a commit carries many claims instead of each its own (measured in `npm run bench`:
 * 1.15 statements per activity at 50 in flight, against 1.45 with two in flight and 2 unbatched).
 */
const STATEMENTS_IN_FLIGHT = 1;
/**
 * A statement in flight this long (ten times the p99 of a loaded 2-core server) no longer holds the
 * next one back: one stuck on a half-open connection delays later claims once, not until it dies.
 */
const STALLED_STATEMENT_MS = 500;
/** The most claims (or records) one statement carries. */
const MAX_BATCH = 100;
/** Awaited completions remembered for `waitersToTell` (each is asked for at once, so a few suffice). */
const MAX_AWAITED_COMPLETIONS = 10_000;

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
  private checkedOnce: Promise<CheckedSchema> | undefined;
  private ledger: PostgresAuditLedger | undefined;
  private readonly signer: RecordSigner;
  private warnedUnsigned = false;
  /** Told when a ghost someone was flagged as waiting on is undone (see `onGhostReleased`). */
  private readonly ghostListeners = new Set<(ghost: HeldClaim) => void>();
  /** Tokens of claims this store completed or released while someone was flagged as waiting on them (see `waitersToTell`). */
  private readonly awaitedCompletions = new Set<string>();
  private readonly claims: NaturalBatch<PendingClaim, Claim | null>;
  private readonly records: NaturalBatch<PendingRecord, boolean>;
  private readonly undo: ClaimUndo;

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
    this.pool = options.pool;
    this.schema = options.schema ?? DEFAULT_SCHEMA;
    const quotedSchema = quoteIdentifier('schema', this.schema);
    this.statements = claimStatements(quotedSchema, { synchronousRecords: options.synchronousRecords ?? false });
    this.channel = outcomeChannel(this.schema);
    this.logger = options.logger ?? defaultStoreLogger;
    this.signer = new RecordSigner(options);
    this.listener = new ClaimListener(connectionConfigOf(this.pool), this.channel, this.logger);
    // Named by schema and statement set, so two stores on one pool never share a name for two texts.
    const statementSet = `${this.schema}/${options.synchronousRecords ? 'synchronous' : 'relaxed'}-records`;
    this.statementPrefix = options.preparedStatements === false ? null : `ti_${createHash('sha256').update(statementSet).digest('hex').slice(0, 12)}`;
    this.guardPool();
    const batching = {
      maxInFlight: options.batchStatements === false ? Number.POSITIVE_INFINITY : STATEMENTS_IN_FLIGHT,
      maxBatch: options.batchStatements === false ? 1 : MAX_BATCH,
      stalledAfterMs: STALLED_STATEMENT_MS,
    };
    this.claims = new NaturalBatch({ ...batching, send: (pending) => this.insertClaims(pending) });
    this.records = new NaturalBatch({ ...batching, send: (pending) => this.recordResults(pending) });
    this.undo = new ClaimUndo(async (keys, tokens) => {
      const { rows } = await this.pool.query<{ token: string; key: string; awaited: boolean }>(this.statements.undoClaims, [keys, tokens]);
      // Someone was refused (or waited) on a ghost meanwhile: nothing ran under it, and they must hear so.
      for (const row of rows) if (row.awaited) this.ghostReleased({ key: row.key, token: row.token });
      return rows.map((row) => row.token);
    }, this.logger);
  }

  async keySalt(): Promise<KeySalt> {
    return (await this.checkOnce()).keySalt;
  }

  async begin(request: ClaimRequest, leaseMs: number): Promise<BeginResult> {
    await this.checkOnce();
    // In a refused call's place, the refused call's record decides: it is looked up first, never claimed under.
    const refused = request.refusedKey === undefined || request.refusedKey === request.key ? null : await this.get(request.refusedKey);
    if (refused) return { won: false, claim: refused };
    // A claim can be released between our failed insert and our read; then we simply try again.
    for (let attempt = 1; attempt <= BEGIN_ATTEMPTS; attempt++) {
      const inserted = await this.claims.submit({ request, leaseMs });
      if (inserted) return { won: true, claim: inserted };
      // A separate statement, not a CTE: only a new snapshot sees a row a concurrent caller just committed.
      const existing = await this.get(request.key);
      // A claim of this store's whose caller was told it failed (its insert's answer was lost): nothing ran
      // under it. Undo it now and claim again, rather than let this retry wait out its lease and refuse.
      if (existing && this.undo.isGhost(existing.token)) {
        // Undone now, or by a background pass since it was read: either way, read and claim again.
        await this.undo.undoNow(existing.token);
        continue;
      }
      if (existing) return { won: false, claim: existing };
    }
    throw new ClaimContendedError(request.key, BEGIN_ATTEMPTS);
  }

  async get(key: string): Promise<Claim | null> {
    const { rows } = await this.query<ClaimRow>('get', this.statements.get, [key]);
    return rows[0] ? this.claimOf(rows[0]) : null;
  }

  async complete(claim: Claim, result: Payload): Promise<boolean> {
    const json = payloadToJson(result);
    // The record drops any note's detail (a taker's question about the call: the statement clears it), as signed here.
    const fields: SignedFields = { ...claim, state: 'completed', result: json, outcomeNote: claim.outcomeNote, outcomeDetail: null };
    return this.records.submit({ claim, result: json, ...this.signer.sign(fields) });
  }

  async release(claim: Claim): Promise<boolean> {
    return this.settle('release', this.statements.release, [claim.key, claim.token, this.channel], { noteAwaited: true });
  }

  async markUnknown(claim: Claim, note: OutcomeNote): Promise<boolean> {
    const summary = pgText(note.summary);
    const detail = note.detail ? payloadToJson(note.detail) : null;
    const { mac, secretId } = this.signer.sign({ ...claim, state: 'unknown', result: null, outcomeNote: summary, outcomeDetail: detail });
    return this.settle('mark_unknown', this.statements.markUnknown, [claim.key, claim.token, this.channel, summary, mac, secretId, detail]);
  }

  async handBack(taken: Claim, orphan: Claim, note: OutcomeNote): Promise<boolean> {
    const summary = pgText(note.summary);
    const detail = note.detail ? payloadToJson(note.detail) : null;
    const { mac, secretId } = this.signer.sign({ ...orphan, state: 'unknown', result: null, outcomeNote: summary, outcomeDetail: detail });
    return this.settle('hand_back', this.statements.handBack, [
      taken.key,
      taken.token,
      this.channel,
      orphan.token,
      orphan.attempt,
      orphan.claimedBy,
      orphan.claimedAt,
      orphan.leaseExpiresAt,
      orphan.workflowId,
      orphan.runId,
      orphan.activityId,
      orphan.deadlineAt,
      summary,
      detail,
      mac,
      secretId,
    ]);
  }

  async takeOver(orphan: Claim, request: ClaimRequest, leaseMs: number, note?: OutcomeNote): Promise<Claim | null> {
    const summary = note ? pgText(note.summary) : null;
    const detail = note?.detail ? payloadToJson(note.detail) : null;
    const token = randomUUID();
    const taker = {
      ...orphan,
      state: 'claimed' as const,
      token,
      attempt: request.attempt,
      claimedBy: request.claimedBy,
      workflowId: request.workflowId,
      runId: request.runId,
      activityId: request.activityId,
    };
    const { mac, secretId } = this.signer.sign({ ...taker, result: null, outcomeNote: summary, outcomeDetail: detail });
    const { rows } = await this.pool.query<ClaimRow>(this.statements.takeOver, [
      orphan.key,
      orphan.token,
      token,
      request.attempt,
      request.claimedBy,
      leaseMs,
      request.workflowId,
      request.runId,
      request.activityId,
      request.deadlineMs,
      mac,
      secretId,
      summary,
      detail,
      request.audited ?? false,
    ]);
    return rows[0] ? this.claimOf(rows[0]) : null;
  }

  async addWaiter(waiter: Waiter): Promise<WaiterNoted> {
    const { rows } = await this.pool.query<{ state: ClaimState | null }>(this.statements.addWaiter, [
      waiter.key,
      waiter.namespace,
      waiter.workflowId,
      waiter.runId,
      waiter.activityType,
    ]);
    return { claimState: rows[0]?.state ?? null };
  }

  onGhostReleased(listener: (ghost: HeldClaim) => void): () => void {
    this.ghostListeners.add(listener);
    return () => void this.ghostListeners.delete(listener);
  }

  private ghostReleased(ghost: HeldClaim): void {
    this.noteAwaitedCompletion(ghost.token);
    for (const listener of this.ghostListeners) listener(ghost);
  }

  async waitersToTell(claim: HeldClaim): Promise<readonly Waiter[]> {
    // Only a claim flagged as awaited can have waiters: every other completion costs no statement here.
    if (!this.awaitedCompletions.delete(claim.token)) return [];
    const { rows } = await this.pool.query<Waiter>(this.statements.waitersToTell, [claim.key]);
    return rows;
  }

  async waitersTold(key: string, waiters: readonly Pick<Waiter, 'namespace' | 'workflowId'>[]): Promise<void> {
    if (waiters.length === 0) return;
    await this.pool.query(this.statements.waitersTold, [key, waiters.map((waiter) => waiter.namespace), waiters.map((waiter) => waiter.workflowId)]);
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
    const { rows } = await this.query<{ token: string }>(
      'renew',
      this.statements.renew,
      [claims.map((claim) => claim.key), claims.map((claim) => claim.token), leaseMs],
      timeoutMs,
    );
    return rows.map((row) => row.token);
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

  /**
   * Closes the store's own LISTEN connection (the pool stays the caller's). A claim whose insert was
   * cut in flight is still looked for, through the pool, until its time is up (twice the lease), and
   * undone if it committed; a pool ended before then leaves it to be refused, with a warning.
   */
  async close(): Promise<void> {
    await Promise.all([this.listener.stop(), this.undo.stop()]);
  }

  /**
   * Inserts the claims in one statement. What it could not insert was claimed already (the caller reads
   * who holds it). Refused by Postgres (an error that rolled it back: nothing was inserted), each is
   * tried alone, so one request's error stays its own; lost in flight, it may have committed, so each
   * claim is undone by its token, as one alone would be.
   */
  private async insertClaims(pending: readonly PendingClaim[]): Promise<Settled<Claim | null>[]> {
    if (pending.length === 1) return [await settle(this.insertOrUndo(pending[0]!.request, pending[0]!.leaseMs))];
    const signed = pending.map(({ request, leaseMs }) => {
      const token = randomUUID();
      return { request, leaseMs, token, ...this.signClaim(request, token) };
    });
    const column = <T>(pick: (claim: (typeof signed)[number]) => T) => signed.map(pick);
    let rows: ClaimRow[];
    try {
      ({ rows } = await this.query<ClaimRow>('claim_batch', this.statements.claimBatch, [
        column(({ request }) => request.key),
        column(({ token }) => token),
        column(({ request }) => request.fingerprint),
        column(({ request }) => request.namespace),
        column(({ request }) => request.activityType),
        column(({ request }) => request.workflowId),
        column(({ request }) => request.runId),
        column(({ request }) => request.activityId),
        column(({ request }) => request.attempt),
        column(({ request }) => request.claimedBy),
        column(({ leaseMs }) => leaseMs),
        column(({ request }) => request.deadlineMs),
        column(({ mac }) => mac),
        column(({ secretId }) => secretId),
        column(({ request }) => (request.arguments ? payloadToJson(request.arguments) : null)),
        column(({ request }) => request.audited ?? false),
      ]));
    } catch (error) {
      if (rolledBack(error)) return Promise.all(pending.map(({ request, leaseMs }) => settle(this.insertOrUndo(request, leaseMs))));
      for (const { request, token, leaseMs } of signed) this.undo.add(request.key, token, leaseMs * 2);
      return pending.map(() => ({ ok: false, error }));
    }
    const byToken = new Map(rows.map((row) => [row.token, row]));
    return Promise.all(
      signed.map(async ({ request, token, leaseMs }) => {
        const row = byToken.get(token);
        const read = await settle(Promise.resolve().then(() => (row ? this.claimOf(row) : null)));
        // Inserted, but its caller is told it failed (it will not call): the claim goes, as one alone would.
        if (!read.ok) this.undo.add(request.key, token, leaseMs * 2);
        return read;
      }),
    );
  }

  /**
   * Records the results in one statement: true for each claim still the caller's. Refused by Postgres,
   * each is recorded alone (one bad row does not fail its neighbours); lost in flight, each caller is
   * told so and tries again, as it would alone.
   */
  private async recordResults(pending: readonly PendingRecord[]): Promise<Settled<boolean>[]> {
    const alone = ({ claim, result, mac, secretId }: PendingRecord) =>
      settle(this.settle('complete', this.statements.complete, [claim.key, claim.token, this.channel, result, mac, secretId], { noteAwaited: true }));
    if (pending.length === 1) return [await alone(pending[0]!)];
    let rows: { token: string; awaited: boolean }[];
    try {
      ({ rows } = await this.query<{ token: string; awaited: boolean }>('complete_batch', this.statements.completeBatch, [
        pending.map(({ claim }) => claim.key),
        pending.map(({ claim }) => claim.token),
        pending.map(({ result }) => result),
        pending.map(({ mac }) => mac),
        pending.map(({ secretId }) => secretId),
        this.channel,
      ]));
    } catch (error) {
      if (rolledBack(error)) return Promise.all(pending.map(alone));
      // Lost in flight, it may have settled claims someone waits on: `waitersToTell` must look.
      for (const { claim } of pending) this.noteAwaitedCompletion(claim.token);
      return pending.map(() => ({ ok: false, error }));
    }
    const settled = new Set(rows.map((row) => row.token));
    for (const row of rows) if (row.awaited) this.noteAwaitedCompletion(row.token);
    return pending.map(({ claim }) => ({ ok: true, value: settled.has(claim.token) }));
  }

  /** Until its caller asks `waitersToTell`; bounded, so a caller that never asks cannot grow it for ever. */
  private noteAwaitedCompletion(token: string): void {
    this.awaitedCompletions.add(token);
    if (this.awaitedCompletions.size > MAX_AWAITED_COMPLETIONS) {
      this.awaitedCompletions.delete(this.awaitedCompletions.values().next().value!);
    }
  }

  /**
   * Runs a statement that settles the caller's own claim and, if someone waits for it, wakes them;
   * with `noteAwaited`, remembers that someone did, for `waitersToTell`.
   */
  private async settle(name: string, statement: string, params: unknown[], options: { noteAwaited?: boolean } = {}): Promise<boolean> {
    const token = params[1] as string;
    let rows: { awaited: boolean }[];
    try {
      ({ rows } = await this.query<{ awaited: boolean }>(name, statement, params));
    } catch (error) {
      // Its answer lost, it may have settled a claim someone waits on: `waitersToTell` must look.
      if (options.noteAwaited) this.noteAwaitedCompletion(token);
      throw error;
    }
    if (options.noteAwaited && rows[0]?.awaited) this.noteAwaitedCompletion(token);
    return rows.length > 0;
  }

  /** Reads the claim and flags it as awaited, so that its outcome is announced. */
  private async markAwaited(key: string): Promise<Claim | null> {
    const { rows } = await this.pool.query<ClaimRow>(this.statements.markAwaited, [key]);
    return rows[0] ? this.claimOf(rows[0]) : null;
  }

  /**
   * The caller is told the claim failed, so it will not call; but the INSERT may have committed
   * before the connection dropped. Undo it by token, or a later attempt would refuse a call
   * that never happened.
   */
  private async insertOrUndo(request: ClaimRequest, leaseMs: number): Promise<Claim | null> {
    const token = randomUUID();
    try {
      return await this.insertClaim(request, token, leaseMs);
    } catch (error) {
      this.undo.add(request.key, token, leaseMs * 2);
      throw error;
    }
  }


  private async insertClaim(request: ClaimRequest, token: string, leaseMs: number): Promise<Claim | null> {
    const { mac, secretId } = this.signClaim(request, token);
    const { rows } = await this.query<ClaimRow>('claim', this.statements.claim, [
      request.key,
      token,
      request.fingerprint,
      request.namespace,
      request.activityType,
      request.workflowId,
      request.runId,
      request.activityId,
      request.attempt,
      request.claimedBy,
      leaseMs,
      request.deadlineMs,
      mac,
      secretId,
      request.arguments ? payloadToJson(request.arguments) : null,
      request.audited ?? false,
    ]);
    return rows[0] ? this.claimOf(rows[0]) : null;
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
   * The row as a claim, its signature checked. A worker without a record secret that meets a signed row
   * is in a deployment that signs: it refuses those rows, and obeys unsigned ones anyone could write.
   * Said once, so a secret left out of a worker's settings is found.
   */
  private claimOf(row: ClaimRow): Claim {
    const claim = toClaim(row, this.signer);
    if (claim.signedBy !== null && this.signer.signingSecretId === null && !this.warnedUnsigned) {
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

  /** A new claim, signed as it is inserted. */
  private signClaim(request: ClaimRequest, token: string) {
    return this.signer.sign({ ...request, state: 'claimed', token, result: null, outcomeNote: null, outcomeDetail: null });
  }

  /**
   * Once per store: a missing or outdated schema is reported by name rather than as a failed
   * insert, a role that could claim but not settle before any claim, a server that could lose a
   * committed claim before the first call; and the key salt is read.
   */
  private checkOnce(): Promise<CheckedSchema> {
    this.checkedOnce ??= (async () => {
      await assertSchemaUsable(this.pool, this.schema);
      await assertWorkerPrivileges(this.pool, this.schema, quoteIdentifier('schema', this.schema));
      await checkDurability(this.pool, this.logger);
      const { rows } = await this.pool.query<{ key_salt: Buffer }>(this.statements.keySettings);
      if (!rows[0]) throw new SchemaNotMigratedError(this.schema, LATEST_MIGRATION, 'its settings row, which keeps the key salt, is gone');
      return { keySalt: new KeySalt(rows[0].key_salt) };
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
      this.logger.warn('Idempotency: an idle Postgres connection failed; the pool replaces it', { error: errorMessage(error) }),
    );
  }
}

/**
 * SQLSTATE classes that end a backend or its connection (connection exception, insufficient resources,
 * operator intervention such as a shutdown or pg_terminate_backend, system and internal errors): the
 * statement may have committed before the backend went.
 */
const BACKEND_LOST_CLASSES = new Set(['08', '53', '57', '58', 'XX']);
/** "Statement completion unknown": the server itself cannot say whether it committed (distributed SQL sends it). */
const COMPLETION_UNKNOWN = '40003';

/**
 * Whether Postgres answered the statement with an error that rolled its transaction back, so nothing it
 * did was committed: an SQLSTATE from the server, and not one that ends the backend (by class, since a
 * server may report its severity in another language). A lost connection, a client-side timeout, or a
 * backend ended mid-statement (perhaps after its commit) leaves that unknown.
 */
function rolledBack(error: unknown): boolean {
  const code = sqlStateOf(error);
  const severity = (error as { severity?: unknown } | null)?.severity;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code) || typeof severity !== 'string') return false;
  if (code === COMPLETION_UNKNOWN || severity === 'FATAL' || severity === 'PANIC') return false;
  return !BACKEND_LOST_CLASSES.has(code.slice(0, 2));
}

function sqlStateOf(error: unknown): unknown {
  return (error as { code?: unknown } | null)?.code;
}

/**
 * What the store's own LISTEN connection connects with: the pool's settings, with a connect timeout
 * and TCP keepalive, so a connection that a failover left half-open is noticed and replaced.
 */
function connectionConfigOf(pool: pg.Pool): pg.ClientConfig {
  const options = (pool as unknown as { options?: pg.ClientConfig }).options ?? {};
  return { ...options, connectionTimeoutMillis: options.connectionTimeoutMillis || 5_000, keepAlive: true };
}
