/**
 * For the unit tier: activities run attempt by attempt under the interceptors
 * on the in-memory store of `temporal-idempotency/testing`, as a user's own
 * unit tests run them, with what a test checks afterwards: the failure an
 * attempt ended with, the lines it logged, and a store that fails (or stalls)
 * on demand, as Postgres does when it is down or slow.
 */
import type { Info } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { defaultPayloadConverter } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { expect } from 'vitest';
import type { ActivityInterceptorsFactory, LogEntry } from '@temporalio/worker';
import { RESUME_KEY_HEADER } from '../../src/call-headers.js';
import type { ResumeKey } from '../../src/call-headers.js';
import type { Payload } from '@temporalio/common';
import { idempotencyInterceptors } from '../../src/index.js';
import type { BeginResult, Claim, ClaimRequest, LedgerCall, Waiter, WaiterNoted } from '../../src/index.js';
import type { KeySalt } from '../../src/key/index.js';
import type { OutcomeNote } from '../../src/store/claim-store.js';
import { IdempotentActivityEnvironment, InMemoryAuditLedger, InMemoryClaimStore, ManualClock } from '../../src/testing/index.js';
import type { Clock, IdempotentActivityEnvironmentOptions } from '../../src/testing/index.js';

/**
 * The store operations a test can make fail or stall: the claim store's, and `recordStart` of the
 * audit ledger kept beside the claims.
 */
export type StoreOperation =
  | 'keySalt'
  | 'begin'
  | 'complete'
  | 'release'
  | 'markUnknown'
  | 'takeOver'
  | 'get'
  | 'addWaiter'
  | 'recordStart';

/**
 * A lease that outlasts an attempt with a one-second start-to-close timeout past its deadline (that
 * timeout plus the 30 s grace), so the owner of a hung call still looks alive there.
 */
export const HUNG_LEASE_MS = 5 * 60_000;

/** What `pg` rejects with when Postgres refuses the connection; its message names the host, which must not leak. */
export function connectionRefused(): Error {
  return Object.assign(new Error('connect ECONNREFUSED 10.1.2.3:5432'), { code: 'ECONNREFUSED' });
}

/** Which operation a store is asked for, and what it is about where the operation names it: for a test's log. */
export interface StoreOperationAsked {
  readonly operation: StoreOperation;
  /** The key it reads or changes. */
  readonly key?: string;
  /** The attempt that asks (a begin or takeover) or that holds the claim it settles. */
  readonly attempt?: number;
}

/**
 * When a store operation's statement takes effect, and when its answer reaches the caller. Between
 * the two, or before the first, other attempts' operations may land: a test's scheduler (fast-check's
 * `fc.scheduler()`) holds each back as a network and a busy database do, in the order it picks.
 */
export interface StoreTurns {
  /** Resolves when the operation's statement may take effect. */
  sent(asked: StoreOperationAsked): Promise<void>;
  /** Resolves when its answer (or its failure) may reach the caller. */
  answered(asked: StoreOperationAsked): Promise<void>;
}

/**
 * The in-memory store, with faults: an operation told to `fail` rejects before it touches a claim
 * (as a statement that never reached Postgres), one told to `stall` waits until released, and
 * with `forgeRecords` every claim found reads as `rejected` (a row written without the record
 * secret) or `unverifiable` (signed by a secret this worker lacks), as the Postgres store reads them.
 * With `turns`, every operation (faulty or not) waits for its turn to land and to answer.
 */
export class FaultyClaimStore extends InMemoryClaimStore {
  private readonly faults = new Map<StoreOperation, { error: unknown; times: number }>();
  private readonly stalls = new Map<StoreOperation, Promise<void>>();
  /** How many times each operation was asked for, failed or not. */
  readonly asked = new Map<StoreOperation, number>();
  forgeRecords: false | 'rejected' | 'unverifiable' = false;
  turns: StoreTurns | undefined;

  private readonly faultyLedger = new FaultyAuditLedger(this.clock, (operation) => this.answer({ operation: 'recordStart' }, operation));

  /**
   * `operation` rejects with `error` the next `times` times it is asked for; `error` may be made from
   * the key asked about (every operation but `keySalt` and `recordStart` has one), as the store's own errors name it.
   */
  fail(operation: StoreOperation, error: unknown = connectionRefused(), times = Number.POSITIVE_INFINITY): void {
    this.faults.set(operation, { error, times });
  }

  heal(operation: StoreOperation): void {
    this.faults.delete(operation);
  }

  /** `operation` waits, from its next call on, until the returned function is called. */
  stall(operation: StoreOperation): () => void {
    let release = () => undefined as void;
    this.stalls.set(operation, new Promise<void>((resolve) => (release = resolve)));
    return () => {
      this.stalls.delete(operation);
      release();
    };
  }

  /** Asked before each key is derived. */
  override keySalt(): Promise<KeySalt> {
    return this.answer({ operation: 'keySalt' }, () => super.keySalt());
  }

  override begin(request: ClaimRequest, leaseMs: number): Promise<BeginResult> {
    return this.answer({ operation: 'begin', key: request.key, attempt: request.attempt }, async () => {
      const begun = await super.begin(request, leaseMs);
      if (begun.won || !this.forgeRecords) return begun;
      return { won: false, claim: { ...begun.claim, authenticity: this.forgeRecords, signedBy: 'feedc0de' } };
    });
  }

  override complete(claim: Claim, result: Payload): Promise<boolean> {
    return this.answer({ operation: 'complete', key: claim.key, attempt: claim.attempt }, () => super.complete(claim, result));
  }

  override release(claim: Claim): Promise<boolean> {
    return this.answer({ operation: 'release', key: claim.key, attempt: claim.attempt }, () => super.release(claim));
  }

  override markUnknown(claim: Claim, note: OutcomeNote): Promise<boolean> {
    return this.answer({ operation: 'markUnknown', key: claim.key, attempt: claim.attempt }, () => super.markUnknown(claim, note));
  }

  override takeOver(orphan: Claim, request: ClaimRequest, leaseMs: number, note?: OutcomeNote): Promise<Claim | null> {
    return this.answer({ operation: 'takeOver', key: orphan.key, attempt: request.attempt }, () => super.takeOver(orphan, request, leaseMs, note));
  }

  /** A read of the claim under `key`: a waiter's poll, or a settlement checking whether its own write took. */
  override get(key: string): Promise<Claim | null> {
    return this.answer({ operation: 'get', key }, () => super.get(key));
  }

  override addWaiter(waiter: Waiter): Promise<WaiterNoted> {
    return this.answer({ operation: 'addWaiter', key: waiter.key }, () => super.addWaiter(waiter));
  }

  override auditLedger(): InMemoryAuditLedger {
    return this.faultyLedger;
  }

  /** The one claim the test's activities left (most tests run one action). */
  async onlyClaim(): Promise<Claim> {
    const claims = await this.claims();
    if (claims.length !== 1) throw new Error(`expected exactly one claim in the store, found ${claims.length}`);
    return claims[0]!;
  }

  /** `operation`, after its turn to land, its stall and its fault (which fails it before it touches a claim); answered in its turn. */
  private async answer<T>(asked: StoreOperationAsked, operation: () => Promise<T>): Promise<T> {
    // Without turns, not even a tick's delay: tests that stall an operation count on when it is asked.
    const { turns } = this;
    if (turns) await turns.sent(asked);
    try {
      await this.ask(asked.operation, asked.key);
      return await operation();
    } finally {
      if (turns) await turns.answered(asked);
    }
  }

  private async ask(operation: StoreOperation, key?: string): Promise<void> {
    this.asked.set(operation, (this.asked.get(operation) ?? 0) + 1);
    await this.stalls.get(operation);
    const fault = this.faults.get(operation);
    if (!fault) return;
    if (--fault.times <= 0) this.faults.delete(operation);
    throw typeof fault.error === 'function' ? fault.error(key) : fault.error;
  }
}

/** The in-memory ledger, whose start entry asks the store's faults first (its own database may be down). */
class FaultyAuditLedger extends InMemoryAuditLedger {
  constructor(
    clock: Clock,
    private readonly answer: (operation: () => Promise<void>) => Promise<void>,
  ) {
    super(clock);
  }

  override recordStart(call: LedgerCall): Promise<void> {
    return this.answer(() => super.recordStart(call));
  }
}

/**
 * One workflow's attempts at its activities, on one store and a clock the test moves. Each
 * `attempt(activityType, n)` is attempt n of that activity type in the same workflow, so attempts of
 * the same action share its key (the default scope, `workflow`).
 */
export class Attempts {
  readonly clock = new ManualClock(new Date('2030-01-02T03:04:05.000Z'));
  readonly store = new FaultyClaimStore({ clock: this.clock });
  /** Everything the attempts logged, the interceptor's lines and the SDK's. */
  readonly logs: LogEntry[] = [];
  readonly environment: IdempotentActivityEnvironment;
  private readonly info: Partial<Info>;
  private readonly logger = new DefaultLogger('DEBUG', (entry) => void this.logs.push(entry));
  /** Another worker on the same store and settings: the one a pass after an operator's decision lands on. */
  private readonly resumingWorker: ActivityInterceptorsFactory[];

  constructor(options: Omit<IdempotentActivityEnvironmentOptions, 'store' | 'mockOptions'> = {}) {
    const { info, ...idempotency } = options;
    // An attempt's own time bounds how long it waits for an earlier one: a minute, unless a test says less.
    this.info = { workflowExecution: { workflowId: 'order-42', runId: 'run-1' }, startToCloseTimeoutMs: 60_000, ...info };
    this.environment = new IdempotentActivityEnvironment({ ...options, store: this.store, info: this.info, mockOptions: { logger: this.logger } });
    this.resumingWorker = idempotencyInterceptors({ ...idempotency, store: this.store });
  }

  /** Attempt `attempt` of `activityType`: `.run(activity, ...args)` it, `.cancel()` it, hear its heartbeats. */
  attempt(activityType: string, attempt: number, info: Partial<Info> = {}): MockActivityEnvironment {
    return this.environment.attempt({ ...info, activityType, attempt });
  }

  /**
   * Attempt `attempt` of `activityType` as `resumable()` schedules it on a pass after an operator's
   * decision: with the resume header its workflow interceptors set (here, an interceptor outside the
   * worker's, since a MockActivityEnvironment sends none), on another worker of the same store.
   */
  resumedAttempt(activityType: string, attempt: number, resume: ResumeKey, info: Partial<Info> = {}): MockActivityEnvironment {
    const header = { [RESUME_KEY_HEADER]: defaultPayloadConverter.toPayload(resume) };
    const fromWorkflow: ActivityInterceptorsFactory = () => ({
      inbound: { execute: (input, next) => next({ ...input, headers: { ...input.headers, ...header } }) },
    });
    return new MockActivityEnvironment(
      { ...this.info, ...info, activityType, attempt },
      { logger: this.logger, interceptors: [fromWorkflow, ...this.resumingWorker] },
    );
  }

  /**
   * Moves the clock a second past the deadline of the only claim's attempt (its start-to-close timeout
   * plus the grace) and returns the claim as it reads then. Start that attempt with a short
   * `startToCloseTimeoutMs` and these attempts with a lease longer than the move (`HUNG_LEASE_MS`): its
   * owner still holds the lease, Temporal has given up on the attempt, and the call hangs.
   */
  async passDeadline(): Promise<Claim> {
    const { deadlineAt } = await this.store.onlyClaim();
    if (deadlineAt === null) throw new Error('the claim has no deadline: start its attempt with a startToCloseTimeoutMs');
    this.clock.advance(deadlineAt.getTime() + 1_000 - this.clock.now());
    const claim = await this.store.onlyClaim();
    if (claim.state === 'claimed' && !claim.ownerAlive) throw new Error('the owner\'s lease lapsed before its deadline: use a longer leaseMs');
    return claim;
  }

  /** The lines logged at `level` whose message matches `pattern`. */
  logged(level: LogEntry['level'], pattern: RegExp): LogEntry[] {
    return this.logs.filter((entry) => entry.level === level && pattern.test(entry.message));
  }
}

/** The ApplicationFailure an attempt ended with (thrown at once, or rejected); fails the test if it did not fail so. */
export async function failureOf(attempt: () => Promise<unknown>): Promise<ApplicationFailure> {
  const error = await errorOf(attempt);
  if (!(error instanceof ApplicationFailure)) throw new Error(`expected an ApplicationFailure, got ${String(error)}`, { cause: error });
  return error;
}

/** The error an attempt ended with (thrown at once, or rejected); fails the test if it succeeded. */
export async function errorOf(attempt: () => Promise<unknown>): Promise<unknown> {
  let outcome: Promise<unknown>;
  try {
    outcome = attempt();
  } catch (error) {
    return error;
  }
  return outcome.then(
    (value) => {
      throw new Error(`expected the attempt to fail, it returned ${JSON.stringify(value)}`);
    },
    (error: unknown) => error,
  );
}

/** An activity's body that runs until the test lets it finish: a call still in flight. */
export function callInFlight<T>(): { readonly started: () => boolean; readonly body: () => Promise<T>; finish(value: T): void; fail(error: unknown): void } {
  let started = false;
  let resolve: (value: T) => void = () => undefined;
  let reject: (error: unknown) => void = () => undefined;
  const done = new Promise<T>((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  return {
    started: () => started,
    body: () => {
      started = true;
      return done;
    },
    finish: (value) => resolve(value),
    fail: (error) => reject(error),
  };
}

/** Attempt 1 of `transfer`, called and not returned yet: `first.finish(value)` ends the call. */
export async function runningTransfer(attempts: Attempts) {
  const first = callInFlight<string>();
  let calls = 0;
  const transfer = async (_amount: number) => {
    calls++;
    return first.body();
  };
  const owner = attempts.attempt('transfer', 1).run(transfer, 100);
  await expect.poll(first.started).toBe(true);
  return { first, owner, transfer, calls: () => calls };
}

/**
 * Attempt 1 of `transfer` calls and has not returned; attempt 2 of the same action (with `info`) waits
 * for it, heartbeating. `waiting` is attempt 2's failure, once it fails.
 */
export async function waitingOnRunningOwner(attempts: Attempts, info: { startToCloseTimeoutMs?: number } = {}) {
  const running = await runningTransfer(attempts);
  const waiter = attempts.attempt('transfer', 2, info);
  let heartbeats = 0;
  waiter.on('heartbeat', () => heartbeats++);
  const started = Date.now();
  const waiting = failureOf(() => waiter.run(running.transfer, 100));
  void waiting.catch(() => undefined);
  await expect.poll(() => heartbeats).toBeGreaterThan(0);
  return { ...running, waiter, waiting, started, heartbeats: () => heartbeats };
}
