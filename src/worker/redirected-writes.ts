/**
 * Which write request of an attempt the vendor answered with a redirect, read
 * from the diagnostics channels of Node's `fetch` (undici) and of `node:http`
 * (which axios and most vendor SDKs use). A client that follows the redirect
 * makes one call of several requests: the vendor may have acted on the write,
 * and a later hop that cannot connect fails with an error that alone looks like
 * "nothing was sent". This says what the vendor already answered.
 */
import diagnosticsChannel from 'node:diagnostics_channel';
import { Context } from '@temporalio/activity';

/** Requests that change nothing at the vendor: answering them with a redirect is no sign that a write happened. */
const READS = new Set(['GET', 'HEAD', 'OPTIONS']);
const MAX_KEYS = 10_000;

/*
 * The channels, held for the life of the process. Node 20 keeps channels by weak reference and forgets a
 * collected one by name: a channel object made after another of the same name was collected, and before
 * Node cleaned up after it, is not the one undici publishes on when the first `fetch` loads it. A worker
 * made in that window (after an earlier worker was dropped) would never hear a redirect.
 */
const REQUESTS_MADE = Object.freeze([diagnosticsChannel.channel('undici:request:create'), diagnosticsChannel.channel('http.client.request.start')]);
const ANSWERS_HEARD = Object.freeze([diagnosticsChannel.channel('undici:request:headers'), diagnosticsChannel.channel('http.client.response.finish')]);

interface Published {
  readonly request?: {
    readonly method?: unknown;
    readonly origin?: unknown;
    readonly protocol?: unknown;
    readonly host?: unknown;
    /** undici: `name: value\r\n` lines, or `[name, value, …]`. */
    readonly headers?: unknown;
    /** node:http. */
    readonly getHeader?: (name: string) => unknown;
  };
  readonly response?: { readonly statusCode?: unknown };
}

/**
 * One worker's watch: it listens while an attempt of the worker runs (its requests are made then), and
 * keeps what it heard to itself.
 */
export class RedirectedWrites {
  /**
   * Each request's attempt, taken when the request is made: answers arrive in the async context of the
   * socket that carries them, which a kept-alive connection shares with whichever attempt opened it.
   */
  private readonly requestAttempts = new WeakMap<object, Context>();
  private readonly requestKeys = new WeakMap<object, string>();
  /** The first write each running attempt had answered with a redirect, as `METHOD origin → status` (no path: it may carry user data). */
  private readonly byAttempt = new WeakMap<Context, string>();
  /**
   * The same, by the idempotency key the request carried (`Idempotency-Key`, as `idempotencyHeaders()` sets
   * it): a request made where the activity's async context is lost (a shared queue that runs a task in the
   * context of the one before) is still the call of the key it carries. Bounded: oldest first out.
   */
  private readonly byKey = new Map<string, string>();
  private readonly onRequest = (message: unknown) => this.noteRequest(message as Published);
  private readonly onAnswer = (message: unknown) => this.noteAnswer(message as Published);
  private attemptsRunning = 0;

  /** An attempt starts: listen (from the first one running). */
  attemptStarted(): void {
    if (this.attemptsRunning++ > 0) return;
    for (const channel of REQUESTS_MADE) channel.subscribe(this.onRequest);
    for (const channel of ANSWERS_HEARD) channel.subscribe(this.onAnswer);
  }

  /** An attempt ended, its outcome classified: stop listening once none runs. */
  attemptEnded(): void {
    if (--this.attemptsRunning > 0) return;
    for (const channel of REQUESTS_MADE) channel.unsubscribe(this.onRequest);
    for (const channel of ANSWERS_HEARD) channel.unsubscribe(this.onAnswer);
  }

  /** The write request of the running attempt of `context`, or carrying one of `keys`, that was answered with a redirect, if any. */
  writeOf(context: Context, keys: readonly string[] = []): string | undefined {
    return this.byAttempt.get(context) ?? keys.map((key) => this.byKey.get(key)).find((write) => write !== undefined);
  }

  private noteRequest({ request }: Published): void {
    if (typeof request !== 'object' || request === null) return;
    const key = idempotencyKeyHeader(request);
    if (key) this.requestKeys.set(request, key);
    try {
      // Made in the caller's async context: the activity's, when an activity made it.
      this.requestAttempts.set(request, Context.current());
    } catch {
      // Not made by an activity.
    }
  }

  private noteAnswer({ request, response }: Published): void {
    if (typeof request !== 'object' || request === null) return;
    const context = this.requestAttempts.get(request);
    const key = this.requestKeys.get(request);
    const method = request.method;
    const status = response?.statusCode;
    if ((!context && !key) || typeof method !== 'string' || READS.has(method.toUpperCase())) return;
    if (typeof status !== 'number' || status < 300 || status >= 400) return;
    // undici names the origin; node:http its protocol and host.
    const origin = typeof request.origin === 'string' || request.origin instanceof URL ? String(request.origin) : `${String(request.protocol ?? '')}//${String(request.host ?? '')}`;
    const write = `${method.toUpperCase()} ${origin} → ${status}`;
    if (context && !this.byAttempt.has(context)) this.byAttempt.set(context, write);
    if (key && !this.byKey.has(key)) {
      this.byKey.set(key, write);
      if (this.byKey.size > MAX_KEYS) this.byKey.delete(this.byKey.keys().next().value!);
    }
  }
}

/** The `Idempotency-Key` header a request carries, however its client keeps headers. */
function idempotencyKeyHeader(request: NonNullable<Published['request']>): string | undefined {
  if (typeof request.getHeader === 'function') {
    const value = request.getHeader('idempotency-key');
    return typeof value === 'string' ? value : undefined;
  }
  const { headers } = request;
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) {
      if (String(headers[i]).toLowerCase() === 'idempotency-key') return String(headers[i + 1]);
    }
  } else if (typeof headers === 'string') {
    return /^idempotency-key:\s*(.+?)\s*$/im.exec(headers)?.[1];
  }
  return undefined;
}
