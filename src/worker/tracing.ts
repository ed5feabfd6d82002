/**
 * Tracing: what each attempt decided, on the activity's OpenTelemetry span
 * (the one `@temporalio/interceptors-opentelemetry` starts), and the claim, the
 * wait for a live owner and the reconciliation as child spans of it.
 *
 * Only through `@opentelemetry/api`, an optional peer dependency, loaded here
 * if the application has it. Without it, or without a span active when the
 * attempt starts (no SDK registered, or the OpenTelemetry interceptor
 * registered inside ours), nothing is traced and nothing else changes.
 *
 * Spans carry keys, decisions, failure types and error class names, never
 * arguments, results or error texts: those may hold personal data (SECURITY.md).
 */
import { createRequire } from 'node:module';
import type * as OpenTelemetry from '@opentelemetry/api';
import type { BeginResult } from '../store/index.js';
import { failureType } from '../error-text.js';

/** Child spans of the activity's span. */
export const SPAN_NAMES = {
  claim: 'idempotency.claim',
  wait: 'idempotency.wait',
  reconcile: 'idempotency.reconcile',
} as const;

/** Attributes, on the activity's span and on ours. */
export const ATTRIBUTES = {
  key: 'idempotency.key',
  decision: 'idempotency.decision',
  refusalType: 'idempotency.refusal_type',
  refusalReason: 'idempotency.refusal_reason',
  claimWon: 'idempotency.claim.won',
  claimFoundState: 'idempotency.claim.found_state',
  waitOutcome: 'idempotency.wait.outcome',
  reconcileAnswer: 'idempotency.reconcile.answer',
  errorType: 'error.type',
} as const;

/** The event each decision adds to the activity's span, in order (the attribute keeps the last). */
export const DECISION_EVENT = 'idempotency.decision';

export type Decision =
  | 'claimed'
  | 'replayed'
  | 'waited'
  | 'refused'
  | 'taken-over'
  | 'reconciled:happened'
  | 'reconciled:not-happened'
  | 'reconciled:unknown';

export type SpanAttributes = Readonly<Record<string, string | number | boolean | undefined>>;

const TRACER_NAME = 'temporal-idempotency';

const api = loadOpenTelemetryApi();

/** The application's `@opentelemetry/api`, or null when it has none. */
function loadOpenTelemetryApi(): typeof OpenTelemetry | null {
  try {
    return createRequire(import.meta.url)('@opentelemetry/api') as typeof OpenTelemetry;
  } catch (error) {
    const { code, message } = error as { code?: unknown; message?: unknown };
    if (code === 'MODULE_NOT_FOUND' && typeof message === 'string' && message.includes('@opentelemetry/api')) return null;
    throw error;
  }
}

function activeSpan(): OpenTelemetry.Span | undefined {
  return api?.trace.getSpan(api.context.active());
}

/** One attempt's decisions, on the span that was active when the attempt started: the activity's. */
export class AttemptTrace {
  private constructor(private readonly span: OpenTelemetry.Span | undefined) {}

  /** Until the attempt starts. */
  static readonly none = new AttemptTrace(undefined);

  /** Call as the attempt starts, while the activity's span is the active one. */
  static ofActiveSpan(): AttemptTrace {
    return new AttemptTrace(activeSpan());
  }

  keyed(key: string): void {
    this.span?.setAttribute(ATTRIBUTES.key, key);
  }

  decided(decision: Decision): void {
    this.span?.setAttribute(ATTRIBUTES.decision, decision);
    this.span?.addEvent(DECISION_EVENT, { [ATTRIBUTES.decision]: decision });
  }

  /** The failure type and its case (`owner-died`, …) only: the message stays in the failure. */
  refused(type: string, reason: string | undefined): void {
    this.decided('refused');
    this.span?.setAttributes(defined({ [ATTRIBUTES.refusalType]: type, [ATTRIBUTES.refusalReason]: reason }));
  }
}

/**
 * Runs `operation` in a child span of the active span, and active itself, so spans the operation
 * starts (a Postgres client's, a vendor lookup's) nest under it. With no active span, just runs it.
 * `outcome` describes the result in attributes; a thrown error is named by its class only.
 */
export async function inChildSpan<T>(name: string, operation: () => Promise<T>, outcome: (result: T) => SpanAttributes = () => ({})): Promise<T> {
  const parent = activeSpan();
  if (!api || !parent) return operation();
  const parentContext = api.context.active();
  const span = api.trace.getTracer(TRACER_NAME).startSpan(name, {}, parentContext);
  try {
    const result = await api.context.with(api.trace.setSpan(parentContext, span), operation);
    span.setAttributes(defined(outcome(result)));
    return result;
  } catch (error) {
    span.setAttribute(ATTRIBUTES.errorType, failureType(error));
    span.setStatus({ code: api.SpanStatusCode.ERROR });
    throw error;
  } finally {
    span.end();
  }
}

/** Claiming the key: the Postgres round trip before any call, and what it found. */
export function tracedClaim(begin: () => Promise<BeginResult>): Promise<BeginResult> {
  return inChildSpan(SPAN_NAMES.claim, begin, (begun) => ({
    [ATTRIBUTES.claimWon]: begun.won,
    [ATTRIBUTES.claimFoundState]: begun.won ? undefined : begun.claim.state,
  }));
}

function defined(attributes: SpanAttributes): Record<string, string | number | boolean> {
  const kept: Record<string, string | number | boolean> = {};
  for (const [name, value] of Object.entries(attributes)) if (value !== undefined) kept[name] = value;
  return kept;
}
