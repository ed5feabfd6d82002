/**
 * The audit ledger as an activity interceptor: it appends a start entry before
 * the call and a finish entry after it. It must sit inside the idempotency
 * interceptor, so a deduplicated replay never reaches it; registered anywhere
 * else it refuses to run, since a ledger that records calls that never
 * happened is worse than none.
 */
import { randomUUID } from 'node:crypto';
import type { Context } from '@temporalio/activity';
import { ApplicationFailure, CompleteAsyncError } from '@temporalio/common';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, ActivityInterceptorsFactory, Next } from '@temporalio/worker';
import { IdempotencyConfiguration } from '../failure-types.js';
import { errorText } from '../error-text.js';
import type { AuditLedger, LedgerCall, LedgerOutcome } from '../store/index.js';
import { currentCallOf } from './current-call.js';
import type { CurrentCall } from './current-call.js';

export class AuditedActivityInbound implements ActivityInboundCallsInterceptor {
  constructor(
    private readonly context: Context,
    private readonly ledger: AuditLedger,
  ) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    const current = this.currentCall();
    const call = this.ledgerCall(current);
    // If this append fails, the error tells the idempotency interceptor nothing went out, which is true.
    await this.ledger.recordStart(call);
    try {
      const result = await next(input);
      await this.finish(call, 'completed', null);
      return result;
    } catch (error) {
      await this.finish(call, outcomeOf(error, current), errorText(error));
      throw error;
    }
  }

  private currentCall(): CurrentCall {
    const { info } = this.context;
    const current = currentCallOf(this.context);
    if (!current) {
      throw ApplicationFailure.create({
        type: IdempotencyConfiguration,
        nonRetryable: true,
        message:
          `Did not run ${info.activityType}: the audit ledger interceptor runs outside (or without) the idempotency ` +
          `interceptor, so it would record calls that a replay never makes. Register both with ` +
          `idempotencyInterceptors({ store, audit: true }), which puts them in the right order.`,
      });
    }
    return current;
  }

  private ledgerCall({ claim }: CurrentCall): LedgerCall {
    const { info } = this.context;
    return {
      callId: randomUUID(),
      key: claim.key,
      activityType: info.activityType,
      workflowId: info.workflowExecution?.workflowId ?? null,
      runId: info.workflowExecution?.runId ?? null,
      activityId: info.activityId,
      attempt: info.attempt,
      worker: claim.claimedBy,
    };
  }

  /** The call already happened: a failed finish entry must not turn into a failed activity. */
  private async finish(call: LedgerCall, outcome: LedgerOutcome, errorMessage: string | null): Promise<void> {
    await this.ledger.recordFinish(call, outcome, errorMessage).catch((error: unknown) =>
      this.context.log.error('Idempotency: could not append the ledger finish entry', { idempotencyKey: call.key, error }),
    );
  }
}

/** The same verdict the claim gets, so the ledger and the claims never tell different stories. */
function outcomeOf(error: unknown, current: CurrentCall): LedgerOutcome {
  if (error instanceof CompleteAsyncError) return 'async';
  return current.outcomeOf(error).ambiguous ? 'outcome-unknown' : 'failed';
}

/**
 * The audit ledger interceptor alone, for composing by hand. It must come after
 * `idempotencyInterceptors()` in `interceptors.activity`; `idempotencyInterceptors({ audit: true })`
 * does that for you.
 */
export function auditLedgerInterceptors(options: { readonly ledger: AuditLedger }): ActivityInterceptorsFactory[] {
  return [(context) => ({ inbound: new AuditedActivityInbound(context, options.ledger) })];
}
