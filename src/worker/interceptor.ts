/**
 * The idempotency interceptor: claim the action's key durably, then run the
 * activity once; answer every repeat from the claim instead of calling again.
 */
import type { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Payload } from '@temporalio/common';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';
import { InvalidKeyInputError } from '../key/index.js';
import type { BeginResult, Claim, ClaimRequest } from '../store/index.js';
import { callIdentityFor, callerOf, checkCallScopeAlone, warnOfMergedCronRuns } from './call-identity.js';
import type { CallIdentity } from './call-identity.js';
import { enterCall, isAudited, leaveCall } from './current-call.js';
import { IDEMPOTENCY_FAILURE_TYPES } from '../failure-types.js';
import { IdempotencyConfigError } from '../errors.js';
import type { ResolvedActivitySettings } from './options.js';
import type { InterceptorDependencies } from './dependencies.js';
import { waitForOwner } from './owner-wait.js';
import {
  claimBusy,
  invalidKeyInput,
  keyReuse,
  misconfigured,
  orphanedClaim,
  recordRejected,
  recordUnverifiable,
  resultUndecodable,
  resumedArgumentsChanged,
  storeUnavailable,
} from './refusals.js';
import { CallSettlement } from './call-settlement.js';
import { cancellationError } from './attempt.js';
import type { Attempt, Step } from './attempt.js';
import { askingAbout, reconciled } from './orphan-reconciling.js';
import { CRON_SCHEDULE_HEADER } from '../call-headers.js';
import { errorClass } from '../error-text.js';
import { AttemptTrace, tracedClaim } from './tracing.js';

/** Stop waiting this long before Temporal's start-to-close timeout, so our answer still counts. */
const ATTEMPT_DEADLINE_MARGIN_MS = 1_000;

export class IdempotentActivityInboundInterceptor implements ActivityInboundCallsInterceptor {
  private readonly settings: ResolvedActivitySettings;
  private readonly startedAt = Date.now();
  /** This attempt's arguments, for a reconciler. */
  private args: readonly unknown[] = [];
  /** This attempt's decisions, on the activity's span (when one is active as the attempt starts). */
  private trace = AttemptTrace.none;

  constructor(
    private readonly context: Context,
    private readonly deps: InterceptorDependencies,
  ) {
    this.settings = deps.options.settingsFor(context.info.activityType, context.log);
  }

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    // Not in the constructor: the OpenTelemetry interceptor, registered outside this one, starts its span just before.
    this.trace = AttemptTrace.ofActiveSpan();
    try {
      return await this.claimAndRun(input, next);
    } catch (error) {
      if (error instanceof ApplicationFailure && isIdempotencyFailure(error.type)) {
        this.deps.metrics.refused(this.context.metricMeter, error.type);
        this.trace.refused(error.type, reasonIn(error));
        // The message stays out of the log line: the failure in history has it, and logs are copied widely.
        this.context.log.warn(`Idempotency: ${error.type}`, { idempotencyKey: keyIn(error), reason: reasonIn(error) });
      }
      throw error;
    }
  }

  private async claimAndRun(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    this.args = input.args;
    const identity = await this.callIdentity(input);
    if (!identity.resumed && input.headers[CRON_SCHEDULE_HEADER]) warnOfMergedCronRuns(this.context, this.settings, this.deps.options.warnOnce);
    if (identity.resumed === 'same') {
      this.context.log.info('Idempotency: resumed after an operator decision; the refused call\'s key decides', {
        idempotencyKey: identity.request.key,
      });
    }
    const { request } = identity;
    this.trace.keyed(request.key);
    for (;;) {
      const claimStarted = performance.now();
      let begun: BeginResult;
      try {
        begun = await tracedClaim(() => this.deps.options.store.begin(request, this.deps.leases.leaseMs));
      } catch (error) {
        throw storeUnavailable(request, error);
      }
      const claimMs = performance.now() - claimStarted;
      this.deps.metrics.claimLatency(this.context.metricMeter, claimMs);
      if (begun.won) this.trace.decided('claimed');
      const step: Step = begun.won ? { kind: 'run', claim: begun.claim } : await this.answerFromClaim(begun.claim, request, identity);
      if (step.kind === 'run') {
        this.deps.metrics.claimed(this.context.metricMeter);
        // Won, but answered after the claim's lease could have lapsed: a try was held up (a partition) and
        // landed after an operator may have released what an earlier try left, and the workflow gone on
        // under another key. Too late to act on: it goes back unsent, and Temporal retries.
        const late = begun.won && claimMs > this.deps.leases.leaseMs ? lateClaim(request, claimMs, this.deps.leases.leaseMs) : undefined;
        return this.runClaimed(step.claim, input, next, late);
      }
      if (step.kind === 'answer') {
        this.deps.metrics.replayed(this.context.metricMeter);
        return step.value;
      }
    }
  }

  /** Derives the call's key and fingerprint under the store's key salt. */
  private async callIdentity(input: ActivityExecuteInput): Promise<CallIdentity> {
    const { info } = this.context;
    const { store } = this.deps.options;
    const salt = await this.storeCall(undefined, () => store.keySalt());
    let identity: CallIdentity;
    try {
      checkCallScopeAlone(info, input.headers, this.settings, (activityType) => this.settingsOf(activityType));
      identity = callIdentityFor(info, input.args, input.headers, this.settings, this.deps.options.workerIdentity, salt);
    } catch (error) {
      if (error instanceof InvalidKeyInputError) throw invalidKeyInput(error, info.activityType);
      if (error instanceof IdempotencyConfigError) throw misconfigured(error, info.activityType);
      throw error;
    }
    const request = { ...identity.request, audited: isAudited(this.context) };
    if (!this.settings.recordArguments) return { ...identity, request };
    return { ...identity, request: { ...request, arguments: await this.encodedArguments(identity) } };
  }

  /**
   * This worker's settings for another activity type. A name it refuses (a near miss under guard
   * 'listed') counts as a write that is not call-scoped: its own attempt is refused anyway.
   */
  private settingsOf(activityType: string): ResolvedActivitySettings {
    try {
      return this.deps.options.settingsFor(activityType, this.context.log);
    } catch {
      return { ...this.settings, guarded: true, scope: 'workflow', key: undefined };
    }
  }

  /**
   * The arguments, for the operator who checks the vendor: encoded like a result. A codec that
   * fails here costs the operator that view, not the call: the claim is made without them.
   */
  private async encodedArguments(identity: CallIdentity): Promise<Payload | null> {
    try {
      return await this.deps.codec.encode(identity.argsText);
    } catch (error) {
      this.context.log.warn('Idempotency: the arguments could not be encoded; the claim is made without them', {
        idempotencyKey: identity.request.key,
        error: errorClass(error),
      });
      return null;
    }
  }

  /** Before the call, any store failure means nothing ran: fail retryably. */
  private async storeCall<T>(request: ClaimRequest | undefined, operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      throw storeUnavailable(request ?? this.unkeyedRequest(), error);
    }
  }

  /** Who is calling, for a refusal that comes before any key exists. */
  private unkeyedRequest(): ClaimRequest {
    const { info } = this.context;
    return {
      ...callerOf(info, this.deps.options.workerIdentity),
      key: '(none yet)',
      fingerprint: '',
      deadlineMs: null,
    };
  }

  /** Someone claimed this key before: never call again; answer from their outcome, or wait for it. */
  private async answerFromClaim(claim: Claim, request: ClaimRequest, identity: CallIdentity): Promise<Step> {
    // A row written or changed without the record secret decides nothing, whatever it says; one signed by a
    // secret this worker does not hold (a rollout in progress) waits for a worker that does.
    if (claim.authenticity === 'rejected') throw recordRejected(claim, request);
    if (claim.authenticity === 'unverifiable') throw recordUnverifiable(claim, request);
    if (claim.fingerprint !== request.fingerprint) {
      // In the refused call's place, the record of the refused key must hold this call's arguments. Other ones are
      // either rebuilt (a fresh request id) or another action that took the place: which, only the workflow's
      // author can say, so neither a replay nor a fresh call is safe.
      if (identity.resumed === 'same' && claim.key !== request.key) return this.resumedWithOtherArguments(claim, request, identity);
      throw keyReuse(claim, request);
    }
    switch (claim.state) {
      case 'completed':
        this.context.log.info('Idempotency: returning the recorded result; the activity was not called again', {
          idempotencyKey: claim.key,
          claimedAttempt: claim.attempt,
        });
        return this.replayed(await this.decodeResult(claim, request));
      case 'unknown':
        return this.orphaned(claim, request);
      case 'claimed':
        if (!claim.ownerAlive) return this.orphaned(claim, request);
        return pastDeadline(claim) ? this.refuseHung(claim, request) : this.waitForOwner(claim, request, identity);
    }
  }

  /**
   * In the refused call's place, with other arguments than the refused call's record. Only an outcome
   * makes that a dead end (the record cannot answer this call, and calling would make another action
   * under its key). Without one (a decision that came early, or by hand) the refusal stands as before:
   * never taken over, reconciled or re-run with these arguments, and the workflow waits again.
   */
  private async resumedWithOtherArguments(claim: Claim, request: ClaimRequest, identity: CallIdentity): Promise<Step> {
    if (claim.state === 'completed') throw resumedArgumentsChanged(claim, request);
    if (claim.state === 'claimed' && claim.ownerAlive && !pastDeadline(claim)) return this.waitForOwner(claim, request, identity);
    if (await this.noteWaiter({ ...request, key: claim.key })) return { kind: 'retry' };
    throw orphanedClaim(claim, request, await this.outcomeDetailOf(claim));
  }

  /**
   * The owner still renews its lease, past its attempt's deadline: Temporal gave up on that attempt, and
   * a call that heartbeats would have been cancelled, so this one hangs. Waiting would end in
   * IdempotencyClaimBusy on every attempt for as long as it hangs; a person decides instead. Never taken
   * over or reconciled: its process lives, and the call may still land.
   */
  private async refuseHung(claim: Claim, request: ClaimRequest): Promise<Step> {
    if (await this.noteWaiter({ ...request, key: claim.key })) return { kind: 'retry' };
    throw orphanedClaim(claim, request, null);
  }

  private replayed(value: unknown): Step {
    this.trace.decided('replayed');
    return { kind: 'answer', value };
  }

  private async decodeResult(claim: Claim, request: ClaimRequest): Promise<unknown> {
    try {
      return await this.deps.codec.decode(claim.result!);
    } catch (error) {
      throw resultUndecodable(claim, request, error);
    }
  }

  /**
   * The call may have gone out and nobody knows its outcome. Ask the vendor when the activity type
   * can (`reconcile`); re-run with the same key when the vendor dedups on it (`vendorDedup`); else
   * refuse, and note the refused workflow so an operator's decision reaches it.
   */
  private async orphaned(orphan: Claim, request: ClaimRequest): Promise<Step> {
    const { reconcile, vendorDedup } = this.settings;
    if (!reconcile && !vendorDedup) {
      // On record under the key the refusal names (found under a previous key, it is not the request's).
      if (await this.noteWaiter({ ...request, key: orphan.key })) return { kind: 'retry' };
      throw orphanedClaim(orphan, request, await this.outcomeDetailOf(orphan));
    }
    // Taken over first: from here on this attempt alone may ask, or call, for this key. To ask, it says on the
    // claim which call it asks about, so an attempt that finds the claim after this one died asking still knows.
    const asking = reconcile ? await askingAbout(this.deps.codec, orphan) : undefined;
    const taken = await this.storeCall(request, () => this.deps.options.store.takeOver(orphan, request, this.deps.leases.leaseMs, asking?.note));
    if (!taken) return { kind: 'retry' };
    this.trace.decided('taken-over');
    if (reconcile) return reconciled(this.attempt(), reconcile, asking!.call, asking!.unfinished, taken);
    this.context.log.warn('Idempotency: re-running an orphaned call with the same key; the vendor dedups on it', {
      idempotencyKey: orphan.key,
      orphanedAttempt: orphan.attempt,
      orphanedBy: orphan.claimedBy,
    });
    return { kind: 'run', claim: taken };
  }

  /** The claim's full note for the refusal's details; withheld when the worker encodes payloads (it would be logged in plain text). */
  private async outcomeDetailOf(claim: Claim): Promise<string | null> {
    if (!claim.outcomeDetail || this.deps.options.payloadCodecs.length > 0) return null;
    try {
      const decoded = (await this.deps.codec.decode(claim.outcomeDetail)) as { note?: unknown } | null;
      return typeof decoded?.note === 'string' ? decoded.note : null;
    } catch {
      return '(the note cannot be decoded by this worker\'s codec)';
    }
  }

  /**
   * Notes this attempt's workflow as waiting on the key it is about to be refused on, so whoever
   * decides (an operator, or an owner that settles its claim late) tells it. True when the claim was
   * settled meanwhile (recorded, or released): read it again rather than refuse a call that has an
   * answer, or whose key is free.
   * Best effort: the refusal stands either way, and the claim's own workflow is always signalled.
   */
  private async noteWaiter(request: ClaimRequest): Promise<boolean> {
    if (request.workflowId === null) return false;
    const noted = await this.deps.options.store
      .addWaiter({
        key: request.key,
        namespace: request.namespace,
        workflowId: request.workflowId,
        runId: request.runId,
        activityType: request.activityType,
      })
      .catch((error: unknown) =>
        this.context.log.error('Idempotency: could not note the refused workflow as waiting on the key', {
          idempotencyKey: request.key,
          error,
        }),
      );
    // Completed: it has an answer now. Gone: its owner released it (nothing happened), so the key is free.
    return noted !== undefined && (noted.claimState === 'completed' || noted.claimState === null);
  }

  /**
   * An earlier attempt is still running (Temporal timed it out, its worker did not die).
   * Wait for its outcome, heartbeating, bounded by `maxWaitMs` and by this attempt's own time.
   */
  private async waitForOwner(claim: Claim, request: ClaimRequest, identity: CallIdentity): Promise<Step> {
    this.deps.metrics.waited(this.context.metricMeter);
    this.trace.decided('waited');
    this.context.log.info('Idempotency: an earlier attempt still runs; waiting for its outcome', {
      idempotencyKey: claim.key,
      ownerAttempt: claim.attempt,
      owner: claim.claimedBy,
    });
    const { store, pollMs } = this.deps.options;
    // A waiting attempt keeps the details the previous attempt heartbeated, so they survive this one.
    const details: unknown = this.context.info.heartbeatDetails;
    const outcome = await waitForOwner(claim, () => this.storeCall(request, () => store.get(claim.key)), {
      deadline: this.waitDeadline(),
      pollMs,
      signal: this.context.cancellationSignal,
      heartbeat: () => this.context.heartbeat(details),
    });
    if (outcome.kind === 'released') return { kind: 'retry' };
    if (outcome.kind === 'busy') throw claimBusy(outcome.claim, request, Date.now() - this.startedAt);
    return this.answerFromClaim(outcome.claim, request, identity);
  }

  private attempt(): Attempt {
    const { context, deps, settings, args, trace } = this;
    return { context, deps, settings, args, trace, deadline: this.waitDeadline() };
  }

  private waitDeadline(): number {
    const { startToCloseTimeoutMs } = this.context.info;
    const attemptEnds = startToCloseTimeoutMs > 0 ? this.startedAt + startToCloseTimeoutMs - ATTEMPT_DEADLINE_MARGIN_MS : Infinity;
    return Math.min(this.startedAt + this.deps.options.maxWaitMs, attemptEnds);
  }

  private async runClaimed(
    claim: Claim,
    input: ActivityExecuteInput,
    next: Next<ActivityInboundCallsInterceptor, 'execute'>,
    /** Why the claim must go back unsent instead of running, if it must. */
    late?: ApplicationFailure,
  ): Promise<unknown> {
    const settlement = new CallSettlement(this.context, this.deps, this.settings, claim);
    this.deps.leases.hold(claim, () => settlement.lost());
    this.deps.redirects.attemptStarted();
    try {
      // Cancelled while the claim was being taken: nothing was sent, so the claim goes back.
      if (this.context.cancellationSignal.aborted) throw await settlement.releaseUnsent(cancellationError(this.context));
      if (late) throw await settlement.releaseUnsent(late);
      enterCall(this.context, { claim, outcomeOf: (error) => settlement.outcomeOf(error) });
      let result: unknown;
      try {
        result = await next(input);
      } catch (error) {
        throw await settlement.failed(error);
      } finally {
        leaveCall(this.context);
      }
      await settlement.succeeded(result);
      return result;
    } finally {
      this.deps.redirects.attemptEnded();
      this.deps.leases.drop(claim.token);
    }
  }
}

/** Whether the claim's attempt is past its deadline (start-to-close plus a grace), by the database's clock. */
function pastDeadline(claim: Claim): boolean {
  return claim.deadlineAt !== null && claim.deadlineAt.getTime() <= claim.readAt.getTime();
}

function isIdempotencyFailure(type: string | undefined | null): type is string {
  return (IDEMPOTENCY_FAILURE_TYPES as readonly (string | undefined | null)[]).includes(type);
}

function reasonIn(failure: ApplicationFailure): string | undefined {
  const details = failure.details?.[0] as { reason?: unknown } | undefined;
  return typeof details?.reason === 'string' ? details.reason : undefined;
}

function keyIn(failure: ApplicationFailure): string | undefined {
  const details = failure.details?.[0] as { key?: unknown } | undefined;
  return typeof details?.key === 'string' ? details.key : undefined;
}

function lateClaim(request: ClaimRequest, claimMs: number, leaseMs: number): ApplicationFailure {
  return storeUnavailable(request, new Error(`the claim was answered after ${Math.round(claimMs)} ms, past its ${leaseMs} ms lease, and given back unsent`));
}
