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
  KeyFormatId,
  KeyFormats,
  OutcomeNote,
  Waiter,
  WaiterNoted,
} from './claim-store.js';
import { KeyFormatUnavailableError, RecordAuthentication } from './record-authentication.js';
import type { RecordSignature, SignedFields, TrustOptions } from './record-authentication.js';
import { KeyFormatChangedError } from './key-format-changed.js';
import { ClaimContendedError } from './claim-contended.js';
import { ClaimUndo } from './claim-undo.js';
import { ClaimListener } from './claim-listener.js';
import type { AuditLedger } from './audit-ledger.js';
import { PostgresAuditLedger } from './postgres-audit-ledger.js';
import { DEFAULT_SCHEMA, outcomeChannel, quoteIdentifier } from './identifiers.js';
import { assertWorkerPrivileges } from './worker-privileges.js';
import { SchemaTooNewError, assertSchemaUsable, readSchemaState } from './schema-version.js';
import { LATEST_MIGRATION } from './migrations/index.js';
import { payloadToJson } from './payload-json.js';
import { inForceOf, toClaim } from './claim-row.js';
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
import { sha256Hex } from '../key/index.js';
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
/** How often a claiming worker notes itself in the worker registry (migration 10). */
const WORKER_NOTE_INTERVAL_MS = 60_000;
/** SQLSTATE of the trigger that refuses a claim keyed in a format that is not in force (migration 7). */
const KEY_FORMAT_REFUSED = 'TI001';
/** The trigger's lock on the settings, under REPEATABLE READ, when they changed after the snapshot (migration 7). */
const SERIALIZATION_FAILURE = '40001';
/** SQLSTATE of the trigger that refuses a claim from a worker older than the schema admits (migration 7). */
const WORKER_TOO_OLD = 'TI002';

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
  /** The key format in force, as last read; re-read when a claim is refused for its format. */
  private inForce: KeyFormatId = { version: 1, secretId: null };
  /** When each identity claiming through this store was last noted in the worker registry. */
  private readonly workerNotedAt = new Map<string, number>();
  private warnedUnprotected = false;
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
    this.authentication = new RecordAuthentication(options);
    this.listener = new ClaimListener(connectionConfigOf(this.pool), this.channel, this.logger);
    // Named by schema and statement set, so two stores on one pool never share a name for two texts.
    const statementSet = `${this.schema}/${options.synchronousRecords ? 'synchronous' : 'relaxed'}-records`;
    this.statementPrefix = options.preparedStatements === false ? null : `ti_${sha256Hex(statementSet).slice(0, 12)}`;
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

  /** How keys are derived now: in the format in force (read from the store), and earlier ones to look up. */
  async keyFormats(claimedBy?: string): Promise<KeyFormats> {
    await this.checkOnce();
    try {
      return this.authentication.keyFormats(this.inForce);
    } catch (error) {
      if (!(error instanceof KeyFormatUnavailableError)) throw error;
      // Read again: only a claim would, and without a key this worker gets to none. The format may have
      // moved since to a secret it holds (an activation after it started).
      await this.readKeyFormat();
      try {
        return this.authentication.keyFormats(this.inForce);
      } catch (stillUnavailable) {
        // On record with the secrets it holds, so `keys activate` sees a worker that could not find
        // claims keyed with the secret in force, though it never got to claim.
        if (claimedBy !== undefined) await this.noteWorker(claimedBy);
        throw stillUnavailable;
      }
    }
  }

  async begin(request: ClaimRequest, leaseMs: number): Promise<BeginResult> {
    await this.checkOnce();
    await this.noteWorker(request.claimedBy);
    // After a move to a new key format, a claim made before it is found under its earlier key.
    // Race-free: no claim in an earlier format can be made once the new one is in force.
    const earlier = await this.firstOf(request.previousKeys.map((previous) => previous.key));
    if (earlier) return { won: false, claim: earlier };
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
    return rows[0] ? await this.claimOf(rows[0]) : null;
  }

  /**
   * Authenticates a row by the format in force that its own statement read (one snapshot: a row
   * forged after an activation is judged by that activation), and remembers that format for signing.
   */
  private async claimOf(row: ClaimRow): Promise<Claim> {
    const inForce = inForceOf(row);
    if (inForce) this.inForce = inForce;
    return toClaim(row, this.authentication, inForce ?? this.inForce);
  }

  async complete(claim: Claim, result: Payload): Promise<boolean> {
    const json = payloadToJson(result);
    // The record drops any note's detail (a taker's question about the call: the statement clears it), as signed here.
    const fields: SignedFields = { ...claim, state: 'completed', result: json, outcomeNote: claim.outcomeNote, outcomeDetail: null };
    return this.writeSigned(fields, ({ mac, secretId }) => this.records.submit({ claim, result: json, mac, secretId }));
  }

  async release(claim: Claim): Promise<boolean> {
    return this.settle('release', this.statements.release, [claim.key, claim.token, this.channel], { noteAwaited: true });
  }

  async markUnknown(claim: Claim, note: OutcomeNote): Promise<boolean> {
    const summary = pgText(note.summary);
    const detail = note.detail ? payloadToJson(note.detail) : null;
    const fields: SignedFields = { ...claim, state: 'unknown', result: null, outcomeNote: summary, outcomeDetail: detail };
    return this.writeSigned(fields, ({ mac, secretId }) =>
      this.settle('mark_unknown', this.statements.markUnknown, [claim.key, claim.token, this.channel, summary, mac, secretId, detail]),
    );
  }

  async handBack(taken: Claim, orphan: Claim, note: OutcomeNote): Promise<boolean> {
    const summary = pgText(note.summary);
    const detail = note.detail ? payloadToJson(note.detail) : null;
    const fields: SignedFields = { ...orphan, state: 'unknown', result: null, outcomeNote: summary, outcomeDetail: detail };
    return this.writeSigned(fields, ({ mac, secretId }) => this.settle('hand_back', this.statements.handBack, [
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
      LATEST_MIGRATION,
    ]));
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
    const fields: SignedFields = { ...taker, result: null, outcomeNote: summary, outcomeDetail: detail };
    const write = async ({ mac, secretId }: RecordSignature) => {
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
        LATEST_MIGRATION,
        summary,
        detail,
      ]).catch((error: unknown) => this.failedAdmission(error));
      return rows[0] ? await this.claimOf(rows[0]) : null;
    };
    // Signed by a secret retired since this store last read the format in force, the statement takes nothing:
    // signed anew and written again, as an outcome is.
    let taken: Claim | null = null;
    await this.writeSigned(fields, async (signature) => (taken = await write(signature)) !== null);
    return taken;
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
        column(({ request }) => request.keyFormat.version),
        column(({ secretId }) => secretId),
        LATEST_MIGRATION,
        column(({ request }) => (request.arguments ? payloadToJson(request.arguments) : null)),
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
        const read = await settle(row ? this.claimOf(row) : Promise.resolve(null));
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
    return rows[0] ? await this.claimOf(rows[0]) : null;
  }

  /** The first of `keys` that has a claim, in the order given; none for no keys. */
  private async firstOf(keys: readonly string[]): Promise<Claim | null> {
    if (keys.length === 0) return null;
    const { rows } = await this.query<ClaimRow>('get_first', this.statements.getFirst, [keys]);
    return rows[0] ? await this.claimOf(rows[0]) : null;
  }

  private sign(fields: SignedFields): RecordSignature {
    return this.authentication.sign(fields, this.inForce);
  }

  /**
   * A new claim is signed with the secret that keyed it, whatever this store read last: the row names
   * one secret (`secret_id`, which the trigger holds to the one in force) and its MAC must be by that
   * one. Reads answering out of order across `keys activate` can leave `inForce` a step behind.
   */
  private signClaim(request: ClaimRequest, token: string): RecordSignature {
    return this.authentication.sign({ ...request, state: 'claimed', token, result: null, outcomeNote: null, outcomeDetail: null }, request.keyFormat);
  }

  /**
   * Writes an outcome (or a takeover) signed with the secret in force as this store last read it. A worker busy with one
   * long call reads nothing meanwhile, so across `keys activate` and `keys retire` that may be a retired
   * secret, whose signature every worker refuses: the statement then writes nothing (or, outside READ
   * COMMITTED, fails with a serialization error), and the outcome is signed again with the secret in force
   * now and written once more. False when it still is not written (the claim is not this caller's any more).
   */
  private async writeSigned(fields: SignedFields, write: (signature: RecordSignature) => Promise<boolean>): Promise<boolean> {
    const signature = this.sign(fields);
    let serializationFailed = false;
    try {
      if (await write(signature)) return true;
    } catch (error) {
      // REPEATABLE READ or SERIALIZABLE: a change committed after the statement's snapshot (a retirement, a lease
      // renewal) failed it, and nothing was written. Written again below; failing again, it is the caller's to retry.
      if (sqlStateOf(error) !== SERIALIZATION_FAILURE) throw error;
      serializationFailed = true;
    }
    if (signature.secretId !== null) await this.readKeyFormat();
    const again = this.sign(fields);
    // Not written, though signed as it is still to be signed: the claim is not this caller's any more.
    if (!serializationFailed && again.secretId === signature.secretId) return false;
    return write(again);
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
      // Nothing was inserted: the format moved on (or, under REPEATABLE READ, the settings changed after this
      // statement's snapshot). Read the one in force; the caller derives keys again.
      if (isKeyFormatRefusal(error) || sqlStateOf(error) === SERIALIZATION_FAILURE) {
        await this.readKeyFormat();
        throw new KeyFormatChangedError(this.inForce);
      }
      // Nothing was inserted, and nothing will be until this worker is upgraded.
      if (sqlStateOf(error) === WORKER_TOO_OLD) return this.failedAdmission(error);
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
      request.keyFormat.version,
      secretId,
      LATEST_MIGRATION,
      request.arguments ? payloadToJson(request.arguments) : null,
    ]);
    return rows[0] ? await this.claimOf(rows[0]) : null;
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
      await assertSchemaUsable(this.pool, this.schema);
      await assertWorkerPrivileges(this.pool, this.schema, quoteIdentifier('schema', this.schema));
      await checkDurability(this.pool, this.logger);
      await this.readKeyFormat();
    })().catch((error: unknown) => {
      this.checkedOnce = undefined; // unreachable now may be reachable later
      throw error;
    });
    return this.checkedOnce;
  }

  /**
   * Notes this worker and the secrets it holds, at its first claim and then at most once a minute, for
   * `keys activate` to check: one statement a minute, before that claim (so a worker that claimed is
   * on record). A claim never fails with it.
   */
  private async noteWorker(identity: string): Promise<void> {
    const now = Date.now();
    if (now - (this.workerNotedAt.get(identity) ?? -Infinity) < WORKER_NOTE_INTERVAL_MS) return;
    this.workerNotedAt.set(identity, now);
    await this.query('note_worker', this.statements.noteWorker, [identity, this.authentication.secretIds, LATEST_MIGRATION]).catch(
      (error: unknown) => {
        // Tried again in a minute: during an outage, one warning a minute, not one a claim.
        this.logger.warn('Idempotency: could not note this worker for keys activate to check', {
          error: errorMessage(error),
        });
      },
    );
  }

  /**
   * A newer release migrated the schema while this worker ran, and its migration leaves this
   * release behind: the trigger refused the claim (TI002), so nothing was claimed or called.
   */
  private async failedAdmission(error: unknown): Promise<never> {
    if (sqlStateOf(error) !== WORKER_TOO_OLD) throw error;
    this.checkedOnce = undefined;
    const state = await readSchemaState(this.pool, quoteIdentifier('schema', this.schema));
    throw new SchemaTooNewError(this.schema, state.version, state.oldestWorkerSchema);
  }

  private async readKeyFormat(): Promise<void> {
    const { rows } = await this.pool.query<{ key_format: 1 | 2; secret_id: string | null }>(this.statements.keyFormatInForce);
    const row = rows[0];
    if (row) this.inForce = { version: row.key_format, secretId: row.secret_id };
    this.warnIfUnprotected();
  }

  /**
   * Given a secret, a worker signs what it writes, but before `keys activate` puts a secret in force
   * it must still obey unsigned rows (those of workers without one, and any a writer forges): said
   * once per store, so nobody believes the records are checked while they are not.
   */
  private warnIfUnprotected(): void {
    if (this.warnedUnprotected || !this.authentication.hasSecret || this.inForce.version !== 1) return;
    this.warnedUnprotected = true;
    this.logger.warn(
      `Idempotency: this worker was given a secret, but no secret is in force in schema ${this.schema}: until one is, ` +
        'records are not authenticated (an unsigned row, forged or not, is obeyed) and keys are unkeyed sha256. ' +
        'Once every worker has the secret, run `temporal-idempotency keys activate`.',
      { schema: this.schema },
    );
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

/** The store's trigger refused a claim keyed in a format that is no longer in force. */
function isKeyFormatRefusal(error: unknown): boolean {
  return sqlStateOf(error) === KEY_FORMAT_REFUSED;
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
