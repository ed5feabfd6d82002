/** One attempt of a guarded activity, as the parts that decide for it see it. */
import type { Context } from '@temporalio/activity';
import { CancelledFailure } from '@temporalio/common';
import type { Claim } from '../store/index.js';
import type { InterceptorDependencies } from './dependencies.js';
import type { ResolvedActivitySettings } from './options.js';
import type { AttemptTrace } from './tracing.js';

/** What an attempt does next with its key, once it knows who holds the claim. */
export type Step =
  /** Answer with this value; the activity is not called. */
  | { readonly kind: 'answer'; readonly value: unknown }
  /** Run the activity under this claim (taken over from a dead owner, for a vendor that dedups). */
  | { readonly kind: 'run'; readonly claim: Claim }
  /** The claim changed hands (released while we waited): try to claim the key again. */
  | { readonly kind: 'retry' };

export interface Attempt {
  readonly context: Context;
  readonly deps: InterceptorDependencies;
  readonly settings: ResolvedActivitySettings;
  /** This attempt's arguments, for a reconciler. */
  readonly args: readonly unknown[];
  readonly trace: AttemptTrace;
  /** When this attempt stops waiting and asking (epoch ms): its own time, less a margin, or `maxWaitMs`. */
  readonly deadline: number;
}

/** The error an activity cancelled before it started should end with. */
export function cancellationError(context: Context): unknown {
  const reason: unknown = context.cancellationSignal.reason;
  return reason instanceof Error ? reason : new CancelledFailure(String(reason ?? 'cancelled'));
}
