/**
 * The idempotency interceptor: claim the action's key durably, then run the
 * activity once; answer every repeat from the claim instead of calling again.
 */
import type { Context } from '@temporalio/activity';
import { CompleteAsyncError } from '@temporalio/common';
import type { Payload } from '@temporalio/common';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';
import { InvalidKeyInputError } from '../key/index.js';
import type { BeginResult, Claim, ClaimRequest } from '../store/index.js';
import { retryFor } from './bounded-retry.js';
import { claimRequestFor } from './call-identity.js';
import { OutcomeUnknownError } from './errors.js';
import type { ResolvedActivitySettings, ResolvedOptions } from './options.js';
import { invalidKeyInput, keyReuse, orphanedClaim, storeUnavailable } from './refusals.js';
import { ResultCodec } from './result-codec.js';

export class IdempotentActivityInbound implements ActivityInboundCallsInterceptor {
  private readonly settings: ResolvedActivitySettings;

  constructor(
    private readonly context: Context,
    private readonly options: ResolvedOptions,
    private readonly codec: ResultCodec,
  ) {
    this.settings = options.settingsFor(context.info.activityType);
  }

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    const request = this.claimRequest(input.args);
    let begun: BeginResult;
    try {
      begun = await this.options.store.begin(request);
    } catch (error) {
      throw storeUnavailable(request, error);
    }
    if (!begun.won) return this.answerFromClaim(begun.claim, request);
    return this.runClaimed(begun.claim, input, next);
  }

  private claimRequest(args: readonly unknown[]): ClaimRequest {
    try {
      return claimRequestFor(this.context.info, args, this.settings, this.options.workerIdentity);
    } catch (error) {
      if (error instanceof InvalidKeyInputError) throw invalidKeyInput(error, this.context.info.activityType);
      throw error;
    }
  }

  /** Someone claimed this key before: never call again, answer from what they recorded. */
  private async answerFromClaim(claim: Claim, request: ClaimRequest): Promise<unknown> {
    if (claim.fingerprint !== request.fingerprint) throw keyReuse(claim, request);
    if (claim.state === 'completed' && claim.result) {
      this.context.log.info('Idempotency: returning the recorded result; the activity was not called again', {
        idempotencyKey: claim.key,
        claimedAttempt: claim.attempt,
      });
      return this.codec.decode(claim.result);
    }
    throw orphanedClaim(claim, request);
  }

  private async runClaimed(
    claim: Claim,
    input: ActivityExecuteInput,
    next: Next<ActivityInboundCallsInterceptor, 'execute'>,
  ): Promise<unknown> {
    let result: unknown;
    try {
      result = await next(input);
    } catch (error) {
      throw await this.settleFailure(claim, error);
    }
    await this.record(claim, result);
    return result;
  }

  /**
   * A thrown error means "did not happen": release, and let Temporal's retry policy decide.
   * Except async completion (the outcome arrives later) and ambiguous errors (it may have happened).
   * Returns the error to throw.
   */
  private async settleFailure(claim: Claim, error: unknown): Promise<unknown> {
    if (error instanceof CompleteAsyncError) return error;
    if (this.isAmbiguous(error)) return this.markUnknown(claim, errorText(error), error);
    await retryFor(this.options.recordRetryMs, () => this.options.store.release(claim.key, claim.token)).catch(
      (storeError: unknown) => this.warnClaimKept(claim, 'release the claim', storeError),
    );
    return error;
  }

  /** Keeps the claim as `unknown` and returns the refusal that every attempt, this one first, will get. */
  private async markUnknown(claim: Claim, note: string, cause: unknown): Promise<unknown> {
    await retryFor(this.options.recordRetryMs, () => this.options.store.markUnknown(claim.key, claim.token, note)).catch(
      (storeError: unknown) => this.warnClaimKept(claim, 'mark the outcome unknown', storeError),
    );
    return orphanedClaim({ ...claim, state: 'unknown', outcomeNote: note }, claim, cause);
  }

  private isAmbiguous(error: unknown): boolean {
    return error instanceof OutcomeUnknownError || this.settings.isAmbiguous?.(error) === true;
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
    await retryFor(this.options.recordRetryMs, () => this.options.store.complete(claim.key, claim.token, payload)).catch(
      (storeError: unknown) => this.warnClaimKept(claim, 'record the result', storeError),
    );
  }

  private warnClaimKept(claim: Claim, what: string, error: unknown): void {
    this.context.log.error(
      `Idempotency: could not ${what}; the claim stays without an outcome and later attempts will be refused`,
      { idempotencyKey: claim.key, error },
    );
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
