/**
 * A claim store in this process's memory, for unit tests: the same answers as
 * `PostgresClaimStore` to every call the interceptor makes (one claim per key,
 * settled only by its token, leases and deadlines, waiters told of outcomes),
 * held to the same behavioural suite. Leases run on an injectable clock.
 *
 * What it is not: durable (a restart forgets every claim), shared (each process,
 * and each store object, has its own claims and its own key salt), or signed (no
 * record secret: records are `not-checked`). Never use it on a real worker.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Payload } from '@temporalio/common';
import type { BeginResult, Claim, ClaimRequest, ClaimState, ClaimStore, HeldClaim, OutcomeNote, Waiter, WaiterNoted } from '../store/claim-store.js';
import { KeySalt } from '../key/index.js';
import { ClaimNotFoundError } from '../store/operator-errors.js';
import { payloadFromJson, payloadToJson } from '../store/payload-json.js';
import type { PayloadJson } from '../store/payload-json.js';
import { pgText } from '../store/pg-text.js';
import { systemClock } from './clock.js';
import type { Clock } from './clock.js';
import { InMemoryAuditLedger } from './in-memory-audit-ledger.js';
import { IdempotencyConfigError, InvalidArgumentError } from '../errors.js';

export interface InMemoryClaimStoreOptions {
  /** What leases, deadlines and timestamps are measured by. Default: the system clock; `ManualClock` in tests that move time. */
  readonly clock?: Clock;
  /** The salt keys are hashed under (16 bytes or more). Default: random, one per store, as `migrate` makes one per schema. */
  readonly keySalt?: Uint8Array;
}

/** A claim as the store keeps it: times in milliseconds, payloads as Postgres keeps them (so they come back alike). */
interface Row {
  readonly key: string;
  state: ClaimState;
  token: string;
  readonly fingerprint: string;
  readonly namespace: string;
  readonly activityType: string;
  workflowId: string | null;
  runId: string | null;
  activityId: string;
  attempt: number;
  claimedBy: string;
  claimedAt: number;
  finishedAt: number | null;
  result: PayloadJson | null;
  outcomeNote: string | null;
  outcomeDetail: PayloadJson | null;
  leaseExpiresAt: number | null;
  deadlineAt: number | null;
  readonly callArguments: PayloadJson | null;
  audited: boolean;
  /** Someone was refused on this claim: whoever settles it tells them (`waitersToTell`). */
  awaited: boolean;
}

export class InMemoryClaimStore implements ClaimStore {
  readonly clock: Clock;
  private readonly rows = new Map<string, Row>();
  /** Workflows refused on a key, and when each was last told of its outcome (null: never). */
  private readonly waiting = new Map<string, Waiter & { refusedAt: number; toldAt: number | null }>();
  /** Tokens of claims settled while someone was refused on them, until their settler asks `waitersToTell`. */
  private readonly awaitedSettlements = new Set<string>();
  private ledger: InMemoryAuditLedger | undefined;
  private readonly salt: KeySalt;

  constructor(options: InMemoryClaimStoreOptions = {}) {
    const clock = options?.clock ?? systemClock;
    if (typeof clock?.now !== 'function') {
      throw new IdempotencyConfigError({
        option: 'clock',
        message: 'InMemoryClaimStore: clock must have a now() that returns milliseconds, such as a ManualClock.',
      });
    }
    this.clock = clock;
    this.salt = new KeySalt(options?.keySalt ?? randomBytes(32));
  }

  async keySalt(): Promise<KeySalt> {
    return this.salt;
  }

  async begin(request: ClaimRequest, leaseMs: number): Promise<BeginResult> {
    requireDuration('leaseMs', leaseMs);
    const refused = request.refusedKey === undefined ? undefined : this.rows.get(request.refusedKey);
    if (refused) return { won: false, claim: this.claimOf(refused) };
    const existing = this.rows.get(request.key);
    if (existing) return { won: false, claim: this.claimOf(existing) };
    const now = this.clock.now();
    const row: Row = {
      key: request.key,
      state: 'claimed',
      token: randomUUID(),
      fingerprint: request.fingerprint,
      namespace: request.namespace,
      activityType: request.activityType,
      workflowId: request.workflowId,
      runId: request.runId,
      activityId: request.activityId,
      attempt: request.attempt,
      claimedBy: request.claimedBy,
      claimedAt: now,
      finishedAt: null,
      result: null,
      outcomeNote: null,
      outcomeDetail: null,
      leaseExpiresAt: now + leaseMs,
      deadlineAt: request.deadlineMs === null ? null : now + request.deadlineMs,
      callArguments: request.arguments ? payloadToJson(request.arguments) : null,
      audited: request.audited ?? false,
      awaited: false,
    };
    this.rows.set(row.key, row);
    // As Postgres answers an insert: the owner has just taken its lease.
    return { won: true, claim: this.claimOf(row, true) };
  }

  /** The claim under `key` as it is now, or null. */
  async get(key: string): Promise<Claim | null> {
    const row = this.rows.get(key);
    return row ? this.claimOf(row) : null;
  }

  /** Every claim, in the order they were made: for a test to look at what its activities left. */
  async claims(): Promise<Claim[]> {
    return [...this.rows.values()].map((row) => this.claimOf(row));
  }

  /** The arguments recorded with the claim, encoded as the worker encodes results; null when none were. */
  async recordedArguments(key: string): Promise<Payload | null> {
    const row = this.rows.get(key);
    if (!row) throw new ClaimNotFoundError(key, 'InMemoryClaimStore.claims() lists the claims there are.');
    return row.callArguments ? payloadFromJson(row.callArguments) : null;
  }

  async complete(claim: Claim, result: Payload): Promise<boolean> {
    return this.settle(claim, (row, now) => {
      this.noteAwaitedSettlement(row);
      row.state = 'completed';
      row.result = payloadToJson(result);
      // As signed: a record's detail is its result; a note's detail (a taker's question) ends with it.
      row.outcomeDetail = null;
      row.finishedAt = now;
    });
  }

  async release(claim: Claim): Promise<boolean> {
    return this.settle(claim, (row) => {
      this.noteAwaitedSettlement(row);
      this.rows.delete(row.key);
    });
  }

  async markUnknown(claim: Claim, note: OutcomeNote): Promise<boolean> {
    return this.settle(claim, (row, now) => {
      row.state = 'unknown';
      row.outcomeNote = pgText(note.summary);
      row.outcomeDetail = note.detail ? payloadToJson(note.detail) : null;
      row.finishedAt = now;
    });
  }

  async handBack(taken: Claim, orphan: Claim, note: OutcomeNote): Promise<boolean> {
    return this.settle(taken, (row, now) => {
      Object.assign(row, {
        token: orphan.token,
        state: 'unknown',
        attempt: orphan.attempt,
        claimedBy: orphan.claimedBy,
        claimedAt: orphan.claimedAt.getTime(),
        leaseExpiresAt: orphan.leaseExpiresAt?.getTime() ?? null,
        workflowId: orphan.workflowId,
        runId: orphan.runId,
        activityId: orphan.activityId,
        deadlineAt: orphan.deadlineAt?.getTime() ?? null,
        outcomeNote: pgText(note.summary),
        outcomeDetail: note.detail ? payloadToJson(note.detail) : null,
        finishedAt: now,
      } satisfies Partial<Row>);
    });
  }

  async takeOver(orphan: Claim, request: ClaimRequest, leaseMs: number, note?: OutcomeNote): Promise<Claim | null> {
    requireDuration('leaseMs', leaseMs);
    const row = this.rows.get(orphan.key);
    const now = this.clock.now();
    if (!row || row.token !== orphan.token) return null;
    const orphaned = row.state === 'unknown' || (row.state === 'claimed' && (row.leaseExpiresAt === null || row.leaseExpiresAt <= now));
    if (!orphaned) return null;
    // The taker's identity replaces the orphan's, so the claim never pairs one attempt's ids with another's.
    Object.assign(row, {
      token: randomUUID(),
      state: 'claimed',
      attempt: request.attempt,
      claimedBy: request.claimedBy,
      claimedAt: now,
      leaseExpiresAt: now + leaseMs,
      finishedAt: null,
      outcomeNote: note ? pgText(note.summary) : null,
      outcomeDetail: note?.detail ? payloadToJson(note.detail) : null,
      result: null,
      workflowId: request.workflowId,
      runId: request.runId,
      activityId: request.activityId,
      deadlineAt: request.deadlineMs === null ? null : now + request.deadlineMs,
      audited: request.audited ?? false,
    } satisfies Partial<Row>);
    return this.claimOf(row, true);
  }

  async renewLeases(claims: readonly HeldClaim[], leaseMs: number): Promise<readonly string[]> {
    requireDuration('leaseMs', leaseMs);
    const now = this.clock.now();
    const renewed: string[] = [];
    for (const held of claims) {
      const row = this.rows.get(held.key);
      if (row?.token !== held.token || row.state !== 'claimed' || renewed.includes(held.token)) continue;
      row.leaseExpiresAt = now + leaseMs;
      renewed.push(held.token);
    }
    return renewed;
  }

  async addWaiter(waiter: Waiter): Promise<WaiterNoted> {
    const { key, namespace, workflowId, runId, activityType } = waiter;
    const id = `${key}\u0000${namespace}\u0000${workflowId}`;
    const row = this.rows.get(key);
    const claimState = row?.state ?? null;
    if (row) row.awaited = true;
    // A claim completed or gone meanwhile: the refused call has its answer (or a free key), and nobody waits.
    if (claimState === null || claimState === 'completed') return { claimState };
    this.waiting.set(id, { key, namespace, workflowId, runId, activityType, refusedAt: this.clock.now(), toldAt: this.waiting.get(id)?.toldAt ?? null });
    return { claimState };
  }

  /** As Postgres answers: once, to the settler of a claim someone was refused on; nothing to anyone else. */
  async waitersToTell(claim: HeldClaim): Promise<readonly Waiter[]> {
    if (!this.awaitedSettlements.delete(claim.token)) return [];
    return [...this.waiting.values()]
      .filter((waiter) => waiter.key === claim.key && (waiter.toldAt === null || waiter.toldAt < waiter.refusedAt))
      .sort((a, b) => a.refusedAt - b.refusedAt)
      .map(({ refusedAt: _, toldAt: __, ...waiter }) => waiter);
  }

  async waitersTold(key: string, waiters: readonly Pick<Waiter, 'namespace' | 'workflowId'>[]): Promise<void> {
    for (const { namespace, workflowId } of waiters) {
      const waiter = this.waiting.get(`${key}\u0000${namespace}\u0000${workflowId}`);
      if (waiter) waiter.toldAt = this.clock.now();
    }
  }

  /** The workflows refused on `key` (so an operator's decision would reach them), first refused first. */
  async waitersOf(key: string): Promise<Waiter[]> {
    return [...this.waiting.values()]
      .filter((waiter) => waiter.key === key)
      .sort((a, b) => a.refusedAt - b.refusedAt)
      .map(({ refusedAt: _, toldAt: __, ...waiter }) => waiter);
  }

  /** The calls that went out, kept when the interceptors are registered with `audit: true`. */
  auditLedger(): InMemoryAuditLedger {
    return (this.ledger ??= new InMemoryAuditLedger(this.clock));
  }

  private noteAwaitedSettlement(row: Row): void {
    if (row.awaited) this.awaitedSettlements.add(row.token);
  }

  /** Changes the caller's own claim, if it still holds it and it has no outcome yet. */
  private settle(claim: Claim, change: (row: Row, now: number) => void): boolean {
    const row = this.rows.get(claim.key);
    if (row?.token !== claim.token || row.state !== 'claimed') return false;
    change(row, this.clock.now());
    return true;
  }

  /** A fresh copy (callers cannot change the store through it), with the owner's liveness judged now. */
  private claimOf(row: Row, justClaimed = false): Claim {
    const now = this.clock.now();
    return {
      key: row.key,
      state: row.state,
      token: row.token,
      fingerprint: row.fingerprint,
      namespace: row.namespace,
      activityType: row.activityType,
      workflowId: row.workflowId,
      runId: row.runId,
      activityId: row.activityId,
      attempt: row.attempt,
      claimedBy: row.claimedBy,
      claimedAt: new Date(row.claimedAt),
      finishedAt: dateOrNull(row.finishedAt),
      result: row.result ? payloadFromJson(row.result) : null,
      outcomeNote: row.outcomeNote,
      outcomeDetail: row.outcomeDetail ? payloadFromJson(row.outcomeDetail) : null,
      leaseExpiresAt: dateOrNull(row.leaseExpiresAt),
      ownerAlive: justClaimed || (row.leaseExpiresAt !== null && row.leaseExpiresAt > now),
      deadlineAt: dateOrNull(row.deadlineAt),
      readAt: new Date(now),
      authenticity: 'not-checked',
      signedBy: null,
      audited: row.audited,
    };
  }
}

function dateOrNull(ms: number | null): Date | null {
  return ms === null ? null : new Date(ms);
}

function requireDuration(name: string, ms: number): void {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
    throw new InvalidArgumentError(name, `InMemoryClaimStore: ${name} must be a finite number of milliseconds, 0 or more; got ${String(ms)}.`);
  }
}
