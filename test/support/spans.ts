/**
 * An OpenTelemetry SDK for the tracing tests, registered as an application
 * registers one (a global tracer provider and an AsyncLocalStorage context
 * manager: what NodeSDK sets up), exporting to memory, and a reader that groups
 * the finished spans by activity attempt.
 */
import { context, propagation, trace } from '@opentelemetry/api';
import type { Attributes } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll } from 'vitest';

/** The span Temporal's OpenTelemetry activity interceptor starts for each attempt, as `RunActivity:<type>`. */
export interface TracedAttempt {
  readonly span: ReadableSpan;
  /** The `idempotency.decision` events on it, in order. */
  readonly decisions: readonly string[];
  /** Spans whose parent it is. */
  readonly children: readonly ReadableSpan[];
}

export interface SpanRecorder {
  readonly processor: SimpleSpanProcessor;
  /** Every span finished so far, in the order they ended. */
  spans(): readonly ReadableSpan[];
  /** The activity spans of the workflow's attempts, in the order they started. */
  attemptsOf(workflowId: string): TracedAttempt[];
  childrenOf(span: ReadableSpan): ReadableSpan[];
}

export function useSpanRecorder(): SpanRecorder {
  const exporter = new InMemorySpanExporter();
  const processor = new SimpleSpanProcessor(exporter);
  const provider = new BasicTracerProvider({ spanProcessors: [processor] });
  beforeAll(() => provider.register({ contextManager: new AsyncLocalStorageContextManager().enable() }));
  afterAll(async () => {
    await provider.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
  });
  const spans = () => exporter.getFinishedSpans();
  const childrenOf = (parent: ReadableSpan) => spans().filter((span) => span.parentSpanId === parent.spanContext().spanId);
  return {
    processor,
    spans,
    childrenOf,
    attemptsOf: (workflowId) =>
      spans()
        .filter((span) => span.name.startsWith('RunActivity:') && span.attributes['temporalWorkflowId'] === workflowId)
        .sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1])
        .map((span) => ({
          span,
          decisions: span.events.filter((event) => event.name === 'idempotency.decision').map((event) => String(event.attributes?.['idempotency.decision'])),
          children: childrenOf(span),
        })),
  };
}

/** Every string on every span: names, attributes, events and their attributes, status messages. */
export function textsOn(spans: readonly ReadableSpan[]): string[] {
  const values = (attributes: Attributes | undefined) => Object.values(attributes ?? {}).map(String);
  return spans.flatMap((span) => [
    span.name,
    ...values(span.attributes),
    span.status.message ?? '',
    ...span.events.flatMap((event) => [event.name, ...values(event.attributes)]),
  ]);
}
