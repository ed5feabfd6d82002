/**
 * Which write request an attempt has sent through Node's `fetch` (undici), read
 * from undici's diagnostics channel at the moment a request's headers are
 * written to its socket. One `fetch` can be several requests: a POST answered
 * with a redirect, then a hop that cannot connect, fails with the last hop's
 * error, which alone looks like "nothing was sent". This says what did leave.
 */
import diagnosticsChannel from 'node:diagnostics_channel';
import { Context } from '@temporalio/activity';

/** Requests that change nothing at the vendor: sending them is no sign that a write happened. */
const READS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** The first write request each running attempt sent, as `METHOD origin` (no path: it may carry user data). */
const sentWrites = new WeakMap<Context, string>();
let watching = false;

/** Starts listening, once per process; a request sent before this is not seen. */
export function watchSentWrites(): void {
  if (watching) return;
  watching = true;
  diagnosticsChannel.subscribe('undici:client:sendHeaders', noteSentRequest);
}

/** The write request the running attempt of `context` sent, if any. */
export function sentWriteOf(context: Context): string | undefined {
  return sentWrites.get(context);
}

function noteSentRequest(message: unknown): void {
  const request = (message as { request?: { method?: unknown; origin?: unknown } } | null)?.request;
  if (typeof request?.method !== 'string' || READS.has(request.method.toUpperCase())) return;
  let context: Context;
  try {
    // The channel publishes in the caller's async context: the activity's, when an activity sent it.
    context = Context.current();
  } catch {
    return;
  }
  if (!sentWrites.has(context)) sentWrites.set(context, `${request.method.toUpperCase()} ${String(request.origin ?? '(unknown origin)')}`);
}
