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

/**
 * What the library knows of one activity execution, kept on that execution's Context (as the store marks
 * a pool it guards, on the pool): no module keeps a list, and no execution reads another's. By
 * `Symbol.for`, so a second copy of the library in the process (its ES module and CommonJS builds
 * both loaded) sees the same marks, and a registration through each is still seen as twice.
 */
interface Execution {
  /** An idempotency interceptor guards it: a second one would wait on the first's claim. */
  guarded?: boolean;
  /** Configured as not a write: the ledger lets it through unrecorded. */
  unguarded?: boolean;
  /** An audit ledger records it: the claim says so, so `ledger` can tell silence from "not sent". */
  audited?: boolean;
  /** The call the idempotency interceptor let through, while it runs. */
  call?: CurrentCall | undefined;
}

const EXECUTION = Symbol.for('temporal-idempotency.activity-execution');

function executionOf(context: Context): Execution {
  const holder = context as unknown as { [EXECUTION]?: Execution };
  return (holder[EXECUTION] ??= {});
}

/** Marks the execution guarded; false if an idempotency interceptor already guards it. */
export function markGuarded(context: Context): boolean {
  const execution = executionOf(context);
  if (execution.guarded) return false;
  execution.guarded = true;
  return true;
}

/** Marks an activity the idempotency interceptor deliberately does not guard; returns no interceptors. */
export function markUnguarded(context: Context): Record<string, never> {
  executionOf(context).unguarded = true;
  return {};
}

export function isUnguarded(context: Context): boolean {
  return executionOf(context).unguarded === true;
}

/** Marked by the ledger's factory, which the SDK runs for every execution before any interceptor executes. */
export function markAudited(context: Context): void {
  executionOf(context).audited = true;
}

export function isAudited(context: Context): boolean {
  return executionOf(context).audited === true;
}

export function enterCall(context: Context, call: CurrentCall): void {
  executionOf(context).call = call;
}

export function leaveCall(context: Context): void {
  executionOf(context).call = undefined;
}

/** The call the running activity makes, or undefined when no idempotency interceptor let it through. */
export function currentCallOf(context: Context): CurrentCall | undefined {
  return executionOf(context).call;
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
  const call = currentCallOf(context);
  if (!call) {
    throw new IdempotencyContextError(
      isUnguarded(context)
        ? `${caller} was called in activity ${context.info.activityType}, which its settings leave unguarded (false, or ` +
            `guard: 'listed'): it has no key. Guard it if it writes to a vendor.`
        : `${caller} was called in activity ${context.info.activityType}, which no idempotency interceptor guards: ` +
            `register idempotencyInterceptors({ store }) first in the worker's interceptors.activity.`,
    );
  }
  return call.claim;
}
