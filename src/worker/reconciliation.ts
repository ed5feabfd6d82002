/**
 * Asking the vendor before refusing. A claim without an outcome (its owner died
 * mid-call, or the outcome was unknown) is refused unless somebody can know what
 * happened; for most vendors the activity's author can: a lookup by the
 * idempotency key or client reference the call carried. The interceptor takes
 * the orphaned claim over first, so two attempts never reconcile, or run, at once.
 */
import type { Info } from '@temporalio/activity';
import { errorClass, errorText } from '../error-text.js';
import type { Claim } from '../store/index.js';
import { ATTRIBUTES, SPAN_NAMES, inChildSpan } from './tracing.js';

/** What the activity type's `reconcile` gets: the orphaned call's key, this attempt's arguments, the orphan. */
export interface ReconcileCall<Args extends readonly unknown[] = readonly unknown[]> {
  /** The idempotency key the orphaned call carried (what `idempotencyKey()` returned to it). */
  readonly key: string;
  /** The same key as a UUID (what `idempotencyKey({ format: 'uuid' })` returned). */
  readonly keyUuid: string;
  readonly args: Args;
  /** The orphaned claim as it was found: which attempt on which worker claimed it, when, and any note. */
  readonly claim: Claim;
  readonly info: Info;
  /** Aborted when the reconciliation times out or the attempt is cancelled: pass it to your lookup. */
  readonly signal: AbortSignal;
}

/**
 * The vendor's answer. `happened`: record `result` and return it (the activity is not called).
 * `not-happened`: run the activity, with the same key; only when nothing the orphan sent can
 * still arrive (a lookup by the key the vendor dedups on, and the call passes that key).
 * `unknown`: nobody can tell; the refusal stands, with `reason` beside it.
 */
export type Reconciliation =
  | { readonly outcome: 'happened'; readonly result: unknown }
  | { readonly outcome: 'not-happened' }
  | { readonly outcome: 'unknown'; readonly reason?: string };

export type Reconciler<Args extends readonly unknown[] = readonly unknown[]> = (call: ReconcileCall<Args>) => Promise<Reconciliation>;

/** What became of the question, as the refusal, the ledger and the metrics tell it. */
export type ReconcileAnswer =
  | { readonly outcome: 'happened'; readonly result: unknown }
  | { readonly outcome: 'not-happened' }
  | {
      readonly outcome: 'unknown';
      readonly summary: string;
      readonly detail: string | null;
      /** Set when the time given ran out before the reconciler answered. */
      readonly timedOut?: true;
    };

/**
 * Runs the reconciler, bounded by `timeoutMs` and the attempt's cancellation; never throws. In its
 * own span when traced, so the vendor lookup's spans nest under it; the answer's words stay out of it.
 */
export function askVendor(
  reconcile: Reconciler,
  call: Omit<ReconcileCall, 'signal'>,
  timeoutMs: number,
  cancellation: AbortSignal,
): Promise<ReconcileAnswer> {
  const ask = () => askBounded(reconcile, call, timeoutMs, cancellation);
  return inChildSpan(SPAN_NAMES.reconcile, ask, (answer) => ({ [ATTRIBUTES.reconcileAnswer]: answer.outcome }));
}

async function askBounded(
  reconcile: Reconciler,
  call: Omit<ReconcileCall, 'signal'>,
  timeoutMs: number,
  cancellation: AbortSignal,
): Promise<ReconcileAnswer> {
  const controller = new AbortController();
  const onCancel = () => controller.abort(cancellation.reason);
  cancellation.addEventListener('abort', onCancel, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<ReconcileAnswer>((resolve) => {
    timer = setTimeout(() => {
      controller.abort(new Error(`reconcile timed out after ${timeoutMs} ms`));
      resolve({ outcome: 'unknown', summary: `reconcile gave no answer within ${timeoutMs} ms`, detail: null, timedOut: true });
    }, timeoutMs);
  });
  try {
    return await Promise.race([answerOf(reconcile, { ...call, signal: controller.signal }), timedOut]);
  } finally {
    clearTimeout(timer);
    cancellation.removeEventListener('abort', onCancel);
  }
}

async function answerOf(reconcile: Reconciler, call: ReconcileCall): Promise<ReconcileAnswer> {
  let answer: unknown;
  try {
    answer = await reconcile(call);
  } catch (error) {
    return { outcome: 'unknown', summary: `reconcile threw ${errorClass(error)}`, detail: errorText(error) };
  }
  // Each field read once, inside the try: a vendor SDK's lazy response object may throw from a getter,
  // and the refusal must stand then as when the reconciler itself throws.
  try {
    return readAnswer(answer);
  } catch (error) {
    return { outcome: 'unknown', summary: `reconcile answered something that throws when read (${errorClass(error)})`, detail: errorText(error) };
  }
}

function readAnswer(answer: unknown): ReconcileAnswer {
  const { outcome } = (answer ?? {}) as { outcome?: unknown };
  if (outcome === 'happened') return { outcome, result: (answer as { result?: unknown }).result };
  if (outcome === 'not-happened') return { outcome };
  if (outcome === 'unknown') {
    const reason = (answer as { reason?: unknown }).reason;
    return { outcome, summary: 'reconcile could not tell', detail: typeof reason === 'string' ? reason : null };
  }
  return {
    outcome: 'unknown',
    summary: 'reconcile answered something other than { outcome: happened | not-happened | unknown }',
    detail: null,
  };
}
