/**
 * The audit ledger as an activity interceptor: it appends a start entry before
 * the call and a finish entry after it. It must sit inside the idempotency
 * interceptor, so a deduplicated replay never reaches it; registered anywhere
 * else it refuses to run, since a ledger that records calls that never
 * happened is worse than none.
 */
import { ledgerCallOf } from './call-identity.js';
import type { Context } from '@temporalio/activity';
import { ApplicationFailure, CompleteAsyncError } from '@temporalio/common';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, ActivityInterceptorsFactory, Next } from '@temporalio/worker';
import { IdempotencyConfiguration } from '../failure-types.js';
import { errorClass, errorText } from '../error-text.js';
import { defaultPayloadConverter } from '@temporalio/common';
import type { PayloadCodec, PayloadConverter } from '@temporalio/common';
import type { AuditLedger, LedgerCall, LedgerError, LedgerOutcome } from '../store/index.js';
import { NotSentError } from './errors.js';
import { ResultCodec } from './result-codec.js';
import { currentCallOf, isUnguarded, markAudited } from './current-call.js';
import type { CurrentCall } from './current-call.js';

export class AuditedActivityInboundInterceptor implements ActivityInboundCallsInterceptor {
  constructor(
    private readonly context: Context,
    private readonly ledger: AuditLedger,
    private readonly codec: ResultCodec,
  ) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    // An activity configured as not a write (a read, a poll) makes no external write to record.
    if (isUnguarded(this.context)) return next(input);
    const current = this.currentCall();
    const call = this.ledgerCall(current);
    // If this append fails, nothing went out: say so in the one way the classification cannot misread,
    // or a connection reset from the ledger's own database would look like the vendor call's.
    await this.ledger.recordStart(call).catch((error: unknown) => {
      throw new NotSentError('The audit ledger could not record the start of the call, so it was not made.', { cause: error });
    });
    try {
      const result = await next(input);
      await this.finish(call, 'completed', null);
      return result;
    } catch (error) {
      await this.finish(call, outcomeOf(error, current), await this.ledgerError(error));
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
    return ledgerCallOf(this.context.info, claim.key, claim.claimedBy);
  }

  /** The error's text may carry user data (a URL with its api key): it is stored through the codec. */
  private async ledgerError(error: unknown): Promise<LedgerError> {
    const detail = await this.codec.encode({ error: errorText(error) }).catch(() => null);
    return { errorClass: errorClass(error), detail };
  }

  /** The call already happened: a failed finish entry must not turn into a failed activity. */
  private async finish(call: LedgerCall, outcome: LedgerOutcome, error: LedgerError | null): Promise<void> {
    await this.ledger.recordFinish(call, outcome, error).catch((error: unknown) =>
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
export function auditLedgerInterceptors(options: {
  readonly ledger: AuditLedger;
  /** The worker's converter and codecs: error texts in the ledger are encoded with them. */
  readonly payloadConverter?: PayloadConverter;
  readonly payloadCodecs?: readonly PayloadCodec[];
}): ActivityInterceptorsFactory[] {
  const codec = new ResultCodec(options.payloadConverter ?? defaultPayloadConverter, [...(options.payloadCodecs ?? [])]);
  return [
    (context) => {
      markAudited(context);
      return { inbound: new AuditedActivityInboundInterceptor(context, options.ledger, codec) };
    },
  ];
}
