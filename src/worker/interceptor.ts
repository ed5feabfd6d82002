/**
 * The idempotency interceptor: claim the action's key durably, then run the
 * activity once; answer every repeat from the claim instead of calling again.
 */
import type { Context } from '@temporalio/activity';
import { ApplicationFailure, CompleteAsyncError } from '@temporalio/common';
import type { Payload } from '@temporalio/common';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';
import { InvalidKeyInputError } from '../key/index.js';
import type { Claim, ClaimRequest } from '../store/index.js';
import { retryFor } from './bounded-retry.js';
import { claimRequestFor } from './call-identity.js';
import { enterCall, leaveCall } from './current-call.js';
import { errorText } from '../error-text.js';
import { IDEMPOTENCY_FAILURE_TYPES } from '../failure-types.js';
import { OutcomeUnknownError } from './errors.js';
import type { LeaseKeeper } from './lease-keeper.js';
import { IdempotencyMetrics } from './metrics.js';
import type { ResolvedActivitySettings, ResolvedOptions } from './options.js';
import { claimBusy, invalidKeyInput, keyReuse, orphanedClaim, storeUnavailable } from './refusals.js';
import type { ResultCodec } from './result-codec.js';

/** What an attempt does next with its key, once it knows who holds the claim. */
type Step =
  /** Answer with this value; the activity is not called. */
  | { readonly kind: 'answer'; readonly value: unknown }
  /** Run the activity under this claim (taken over from a dead owner, for a vendor that dedups). */
  | { readonly kind: 'run'; readonly claim: Claim }
  /** The claim changed hands (released while we waited): try to claim the key again. */
  | { readonly kind: 'retry' };

/** Stop waiting this long before Temporal's start-to-close timeout, so our answer still counts. */
const ATTEMPT_DEADLINE_MARGIN_MS = 1_000;

export class IdempotentActivityInbound implements ActivityInboundCallsInterceptor {
  private readonly settings: ResolvedActivitySettings;
  private readonly startedAt = Date.now();
  private readonly metrics: IdempotencyMetrics;

  constructor(
    private readonly context: Context,
    private readonly options: ResolvedOptions,
    private readonly codec: ResultCodec,
    private readonly leases: LeaseKeeper,
  ) {
    this.settings = options.settingsFor(context.info.activityType);
    this.metrics = new IdempotencyMetrics(context.metricMeter);
  }

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    try {
      return await this.claimAndRun(input, next);
    } catch (error) {
      if (error instanceof ApplicationFailure && isIdempotencyFailure(error.type)) {
        this.metrics.refused(error.type);
        this.context.log.warn(`Idempotency: ${error.type}`, { idempotencyKey: keyIn(error), message: error.message });
      }
      throw error;
    }
  }

  private async claimAndRun(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    const request = this.claimRequest(input.args);
    for (;;) {
      const claimStarted = performance.now();
      const begun = await this.storeCall(request, () => this.options.store.begin(request, this.leases.leaseMs));
      this.metrics.claimLatency(performance.now() - claimStarted);
      const step: Step = begun.won ? { kind: 'run', claim: begun.claim } : await this.answerFromClaim(begun.claim, request);
      if (step.kind === 'run') {
        this.metrics.claimed();
        return this.runClaimed(step.claim, input, next);
      }
      if (step.kind === 'answer') {
        this.metrics.replayed();
        return step.value;
      }
    }
  }

  private claimRequest(args: readonly unknown[]): ClaimRequest {
    try {
      return claimRequestFor(this.context.info, args, this.settings, this.options.workerIdentity);
    } catch (error) {
      if (error instanceof InvalidKeyInputError) throw invalidKeyInput(error, this.context.info.activityType);
      throw error;
    }
  }

  /** Before the call, any store failure means nothing ran: fail retryably. */
  private async storeCall<T>(request: ClaimRequest, operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      throw storeUnavailable(request, error);
    }
  }

  /** Someone claimed this key before: never call again; answer from their outcome, or wait for it. */
  private async answerFromClaim(claim: Claim, request: ClaimRequest): Promise<Step> {
    if (claim.fingerprint !== request.fingerprint) throw keyReuse(claim, request);
    switch (claim.state) {
      case 'completed':
        this.context.log.info('Idempotency: returning the recorded result; the activity was not called again', {
          idempotencyKey: claim.key,
          claimedAttempt: claim.attempt,
        });
        return { kind: 'answer', value: await this.codec.decode(claim.result!) };
      case 'unknown':
        return this.orphaned(claim, request);
      case 'claimed':
        return claim.ownerAlive ? this.waitForOwner(claim, request) : this.orphaned(claim, request);
    }
  }

  /**
   * The call may have gone out and nobody knows its outcome. Refuse, unless the vendor dedups
   * on our key: then run again with the same key and let the vendor answer with the original.
   */
  private async orphaned(claim: Claim, request: ClaimRequest): Promise<Step> {
    if (!this.settings.vendorDedup) throw orphanedClaim(claim, request);
    const taken = await this.storeCall(request, () => this.options.store.takeOver(claim, request, this.leases.leaseMs));
    if (!taken) return { kind: 'retry' };
    this.context.log.warn('Idempotency: re-running an orphaned call with the same key; the vendor dedups on it', {
      idempotencyKey: claim.key,
      orphanedAttempt: claim.attempt,
      orphanedBy: claim.claimedBy,
    });
    return { kind: 'run', claim: taken };
  }

  /**
   * An earlier attempt is still running (Temporal timed it out, its worker did not die).
   * Wait for its outcome, heartbeating, bounded by `maxWaitMs` and by this attempt's own time.
   */
  private async waitForOwner(claim: Claim, request: ClaimRequest): Promise<Step> {
    const deadline = this.waitDeadline();
    this.metrics.waited();
    this.context.log.info('Idempotency: an earlier attempt still runs; waiting for its outcome', {
      idempotencyKey: claim.key,
      ownerAttempt: claim.attempt,
      owner: claim.claimedBy,
    });
    const watch = await this.storeCall(request, () => this.options.store.watch(claim.key));
    try {
      for (;;) {
        this.context.heartbeat();
        const current = await this.storeCall(request, () => watch.current());
        if (current === null) return { kind: 'retry' };
        if (current.state !== 'claimed' || !current.ownerAlive) return this.answerFromClaim(current, request);
        const left = deadline - Date.now();
        if (left <= 0 || this.context.cancellationSignal.aborted) {
          throw claimBusy(current, request, Date.now() - this.startedAt);
        }
        await watch.changed(Math.min(this.options.pollMs, left));
      }
    } finally {
      watch.close();
    }
  }

  private waitDeadline(): number {
    const { startToCloseTimeoutMs } = this.context.info;
    const attemptEnds = startToCloseTimeoutMs > 0 ? this.startedAt + startToCloseTimeoutMs - ATTEMPT_DEADLINE_MARGIN_MS : Infinity;
    return Math.min(this.startedAt + this.options.maxWaitMs, attemptEnds);
  }

  private async runClaimed(
    claim: Claim,
    input: ActivityExecuteInput,
    next: Next<ActivityInboundCallsInterceptor, 'execute'>,
  ): Promise<unknown> {
    this.leases.hold(claim);
    enterCall(this.context, claim);
    try {
      let result: unknown;
      try {
        result = await next(input);
      } catch (error) {
        throw await this.settleFailure(claim, error);
      }
      await this.record(claim, result);
      return result;
    } finally {
      leaveCall(this.context);
      this.leases.drop(claim.key);
    }
  }

  /**
   * A thrown error means "did not happen": release, and let Temporal's retry policy decide.
   * Except async completion (the outcome arrives later, elsewhere), and errors after which the call may
   * have happened: marked ambiguous, or thrown because the activity was cancelled mid-flight
   * (worker shutdown, timeout, workflow cancellation). Returns the error to throw.
   */
  private async settleFailure(claim: Claim, error: unknown): Promise<unknown> {
    if (error instanceof CompleteAsyncError) {
      // The outcome goes to Temporal through the client, never here: later attempts must refuse at once.
      await this.markUnknown(claim, 'the activity completes asynchronously; its outcome went to Temporal, not to this store', error);
      return error;
    }
    if (this.context.cancellationSignal.aborted) {
      return this.markUnknown(claim, `cancelled while running (${cancelReason(this.context)}): ${errorText(error)}`, error);
    }
    if (this.isAmbiguous(error)) return this.markUnknown(claim, errorText(error), error);
    const released = await retryFor(this.options.recordRetryMs, () => this.options.store.release(claim.key, claim.token)).catch(
      (storeError: unknown) => void this.warnClaimKept(claim, 'release the claim', storeError),
    );
    if (released === false) this.warnClaimChanged(claim, 'release it');
    return error;
  }

  private isAmbiguous(error: unknown): boolean {
    return error instanceof OutcomeUnknownError || this.settings.isAmbiguous?.(error) === true;
  }

  /** Keeps the claim as `unknown` and returns the refusal that every attempt, this one first, will get. */
  private async markUnknown(claim: Claim, note: string, cause: unknown): Promise<unknown> {
    await retryFor(this.options.recordRetryMs, () => this.options.store.markUnknown(claim.key, claim.token, note)).catch(
      (storeError: unknown) => this.warnClaimKept(claim, 'mark the outcome unknown', storeError),
    );
    return orphanedClaim({ ...claim, state: 'unknown', outcomeNote: note }, claim, cause);
  }

  /**
   * The call happened. Record it; if the store stays unreachable, still return the
   * result (the workflow must know) and leave the claim, so a replay refuses instead of repeating.
   */
  private async record(claim: Claim, result: unknown): Promise<void> {
    let payload: Payload;
    try {
      payload = await this.codec.encode(result);
    } catch (error) {
      // Temporal could not carry this result either; say so now rather than after a retry.
      throw await this.markUnknown(claim, `the call succeeded but its result could not be encoded: ${errorText(error)}`, error);
    }
    const recorded = await retryFor(this.options.recordRetryMs, () => this.options.store.complete(claim.key, claim.token, payload)).catch(
      (storeError: unknown) => void this.warnClaimKept(claim, 'record the result', storeError),
    );
    if (recorded === false) this.warnClaimChanged(claim, 'record its result');
  }

  /** An operator resolved or released the claim (with --force) while the call ran: theirs stands. */
  private warnClaimChanged(claim: Claim, what: string): void {
    this.context.log.warn(`Idempotency: the claim was changed by someone else while the call ran; did not ${what}`, {
      idempotencyKey: claim.key,
    });
  }

  private warnClaimKept(claim: Claim, what: string, error: unknown): void {
    this.context.log.error(
      `Idempotency: could not ${what}; the claim stays without an outcome and later attempts will be refused`,
      { idempotencyKey: claim.key, error },
    );
  }
}

function cancelReason(context: Context): string {
  const reason: unknown = context.cancellationSignal.reason;
  if (reason instanceof Error) return reason.message || reason.name;
  return reason === undefined ? 'no reason given' : String(reason);
}

function isIdempotencyFailure(type: string | undefined | null): type is string {
  return (IDEMPOTENCY_FAILURE_TYPES as readonly (string | undefined | null)[]).includes(type);
}

function keyIn(failure: ApplicationFailure): string | undefined {
  const details = failure.details?.[0] as { key?: unknown } | undefined;
  return typeof details?.key === 'string' ? details.key : undefined;
}
