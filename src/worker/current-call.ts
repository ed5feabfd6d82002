/**
 * The call the idempotency interceptor let through, keyed by its activity
 * context: read by the activity (its key, to hand to the vendor) and by the
 * audit ledger (which must sit inside the idempotency interceptor, and must
 * tell the same story about a failure as the claim does).
 */
import { Context } from '@temporalio/activity';
import { keyToUuid } from '../key/index.js';
import { IdempotencyError } from '../errors.js';
import type { Claim } from '../store/index.js';
import type { OutcomeVerdict } from './outcome-classification.js';

export interface CurrentCall {
  readonly claim: Claim;
  /** The one classification of a thrown error, shared by the ledger and the claim. */
  outcomeOf(error: unknown): OutcomeVerdict;
}

const calls = new WeakMap<Context, CurrentCall>();
/** Activities configured as not writes: the ledger lets them through unrecorded. */
const unguarded = new WeakSet<Context>();

/** Marks an activity the idempotency interceptor deliberately does not guard; returns no interceptors. */
export function markUnguarded(context: Context): Record<string, never> {
  unguarded.add(context);
  return {};
}

export function isUnguarded(context: Context): boolean {
  return unguarded.has(context);
}

/** Activity executions an audit ledger records: the claim says so, so `ledger` can tell silence from "not sent". */
const audited = new WeakSet<Context>();

/** Marked by the ledger's factory, which the SDK runs for every execution before any interceptor executes. */
export function markAudited(context: Context): void {
  audited.add(context);
}

export function isAudited(context: Context): boolean {
  return audited.has(context);
}

export function enterCall(context: Context, call: CurrentCall): void {
  calls.set(context, call);
}

export function leaveCall(context: Context): void {
  calls.delete(context);
}

/** The call the running activity makes, or undefined when no idempotency interceptor let it through. */
export function currentCallOf(context: Context): CurrentCall | undefined {
  return calls.get(context);
}

/** Raised by the key accessors when called where there is no intercepted activity. */
export class IdempotencyContextError extends IdempotencyError {
  override readonly name = 'IdempotencyContextError';
  readonly code = 'no-intercepted-activity';
}

/**
 * The idempotency key of the running activity's action, to pass to a vendor that
 * dedups on it. `format: 'uuid'` gives a deterministic UUID derived from the key.
 */
export function idempotencyKey(options: { readonly format?: 'hex' | 'uuid' } = {}): string {
  const { key } = currentClaim('idempotencyKey()');
  return options.format === 'uuid' ? keyToUuid(key) : key;
}

/** `{ 'Idempotency-Key': key }`, the header Stripe and most HTTP APIs dedup on. */
export function idempotencyHeaders(options: { readonly format?: 'hex' | 'uuid' } = {}): { 'Idempotency-Key': string } {
  currentClaim('idempotencyHeaders()');
  return { 'Idempotency-Key': idempotencyKey(options) };
}

function currentClaim(caller: string): Claim {
  let context: Context;
  try {
    context = Context.current();
  } catch {
    throw new IdempotencyContextError(`${caller} was called outside an activity: call it from inside the activity function.`);
  }
  const call = calls.get(context);
  if (!call) {
    throw new IdempotencyContextError(
      unguarded.has(context)
        ? `${caller} was called in activity ${context.info.activityType}, which its settings leave unguarded (false, or ` +
            `guard: 'listed'): it has no key. Guard it if it writes to a vendor.`
        : `${caller} was called in activity ${context.info.activityType}, which no idempotency interceptor guards: ` +
            `register idempotencyInterceptors({ store }) first in the worker's interceptors.activity.`,
    );
  }
  return call.claim;
}
