/**
 * Did a failed call leave the vendor unchanged ("definite": release the claim,
 * let Temporal retry) or may it have acted ("ambiguous": keep the claim as
 * `unknown`, refuse every repeat)? When in doubt, ambiguous.
 *
 * The order, first match wins:
 * 1. the activity's own word: `OutcomeUnknownError` (ambiguous) or `NotSentError`
 *    (definite), the nearest one in the cause chain;
 * 2. the activity type's `isAmbiguous(error)` returning anything truthy (a classifier that
 *    throws counts as ambiguous, and the note says so);
 * 3. cancellation while the call ran (worker shutdown, timeout, workflow cancel);
 * 4. the transport: a request or response in flight (see transport-errors.ts);
 * 5. anything else: definite.
 */
import { NotSentError, OutcomeUnknownError } from './errors.js';
import { errorClass, errorText } from '../error-text.js';
import { errorChain, transportVerdict } from './transport-errors.js';

export interface OutcomeVerdict {
  readonly ambiguous: boolean;
  /** Why, in words safe to show anywhere: error classes and codes, never an error's message. */
  readonly summary: string;
  /** Why, with the error's own text (which may carry user data): stored and shown only through the codec. */
  readonly detail: string;
}

export interface ClassificationContext {
  readonly isAmbiguous: ((error: unknown) => unknown) | undefined;
  /** Set when the activity was cancelled while it ran; the text says why. */
  readonly cancelled: string | undefined;
  /** A write request of this attempt the vendor answered with a redirect, if any (`POST https://api.vendor.test → 303`). */
  readonly redirectedWrite?: string | undefined;
}

export function classifyOutcome(error: unknown, context: ClassificationContext): OutcomeVerdict {
  const verdict = (ambiguous: boolean, summary: string, detail = errorText(error)): OutcomeVerdict => ({ ambiguous, summary, detail });
  const during = context.cancelled === undefined ? '' : ` while being cancelled (${context.cancelled})`;
  for (const link of errorChain(error)) {
    if (link instanceof OutcomeUnknownError) return verdict(true, `the activity threw ${errorClass(error)}${during}`);
    if (link instanceof NotSentError) return verdict(false, `the activity threw ${errorClass(error)}${during}: not sent`);
  }
  if (context.isAmbiguous) {
    try {
      // Any truthy answer counts (a regex match, a status code): in doubt, the claim is kept.
      if (context.isAmbiguous(error)) return verdict(true, `isAmbiguous matched the activity's ${errorClass(error)}${during}`);
    } catch (classifierError) {
      return verdict(
        true,
        `isAmbiguous threw ${errorClass(classifierError)} while classifying the activity's ${errorClass(error)}; counted as ambiguous`,
        `isAmbiguous threw ${errorText(classifierError)} while classifying ${errorText(error)}`,
      );
    }
  }
  if (context.cancelled !== undefined) {
    return verdict(true, `cancelled while running (${context.cancelled}); the activity threw ${errorClass(error)}`);
  }
  const transport = transportVerdict(error);
  if (transport.inFlight) {
    return verdict(true, `the request may have reached the vendor (${transport.sign}); the activity threw ${errorClass(error)}`);
  }
  if (context.redirectedWrite !== undefined) {
    // A client that follows redirects makes one call of several requests: the error is the last hop's, the write came first.
    return verdict(true, `the vendor had answered ${context.redirectedWrite}, so it may have acted; the activity threw ${errorClass(error)}`);
  }
  return verdict(false, `the activity threw ${errorClass(error)}`);
}
