/**
 * Did a failed call leave the vendor unchanged ("definite": release the claim,
 * let Temporal retry) or may it have acted ("ambiguous": keep the claim as
 * `unknown`, refuse every repeat)? When in doubt, ambiguous.
 *
 * The order, first match wins:
 * 1. the activity's own word: `OutcomeUnknownError` (ambiguous) or `NotSentError`
 *    (definite), the nearest one in the cause chain;
 * 2. the activity type's `isAmbiguous(error)` returning true (a classifier that throws
 *    counts as ambiguous, and the note says so);
 * 3. cancellation while the call ran (worker shutdown, timeout, workflow cancel);
 * 4. the transport: a request or response in flight (see transport-errors.ts);
 * 5. anything else: definite.
 */
import { NotSentError, OutcomeUnknownError } from './errors.js';
import { errorText } from '../error-text.js';
import { errorChain, transportVerdict } from './transport-errors.js';

export interface OutcomeVerdict {
  readonly ambiguous: boolean;
  /** Why, in words for the claim's note and the logs. */
  readonly reason: string;
}

export interface ClassificationContext {
  readonly isAmbiguous: ((error: unknown) => boolean) | undefined;
  /** Set when the activity was cancelled while it ran; the text says why. */
  readonly cancelled: string | undefined;
}

export function classifyOutcome(error: unknown, context: ClassificationContext): OutcomeVerdict {
  for (const link of errorChain(error)) {
    if (link instanceof OutcomeUnknownError) return { ambiguous: true, reason: errorText(error) };
    if (link instanceof NotSentError) return { ambiguous: false, reason: `not sent: ${errorText(error)}` };
  }
  if (context.isAmbiguous) {
    try {
      if (context.isAmbiguous(error) === true) return { ambiguous: true, reason: `isAmbiguous matched ${errorText(error)}` };
    } catch (classifierError) {
      return {
        ambiguous: true,
        reason: `isAmbiguous threw ${errorText(classifierError)} while classifying ${errorText(error)}; counted as ambiguous`,
      };
    }
  }
  if (context.cancelled !== undefined) {
    return { ambiguous: true, reason: `cancelled while running (${context.cancelled}): ${errorText(error)}` };
  }
  const transport = transportVerdict(error);
  if (transport.inFlight) {
    return { ambiguous: true, reason: `the request may have reached the vendor (${transport.sign}): ${errorText(error)}` };
  }
  return { ambiguous: false, reason: errorText(error) };
}
