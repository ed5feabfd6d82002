/**
 * A local stand-in for a payments / telephony vendor: an HTTP server that
 * performs "actions" (charges, calls) and counts every request it receives,
 * so tests and the demo can check how many times a write really went out.
 * Faults are scripted per route: fail before performing, or perform and hang.
 *
 * It honours `Idempotency-Key` the way Stripe does: the same key and body get
 * the stored response (no new action); the same key with another body gets
 * 422; the same key while the first request is still being processed gets 409.
 */
import { EventEmitter } from 'node:events';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface VendorAction {
  readonly route: string;
  readonly id: string;
  readonly body: unknown;
  readonly at: Date;
  readonly idempotencyKey: string | null;
}

export interface VendorRequest {
  readonly route: string;
  readonly idempotencyKey: string | null;
  /** What the vendor did with it. */
  readonly handling: 'performed' | 'replayed' | 'unavailable' | 'conflict' | 'in-flight';
  /** When it arrived (`Date.now()`), before the vendor read it: the log is ordered by when each was handled. */
  readonly receivedAt: number;
}

/**
 * `slow` waits a second before performing, so a concurrent repeat meets the request in flight;
 * `stall-body` performs, sends the status line and half the body, and never finishes it;
 * `hang-before-performing` holds the request unprocessed, and drops it unperformed (its key
 * forgotten) when the caller goes away, as a vendor does with a request it never got to;
 * `answer-when-released` performs and holds the answer until `releaseAnswers()`, so a call stays in
 * flight, its outcome already decided, for as long as a harness needs (a partition, then its heal).
 */
type Fault = 'unavailable' | 'hang-after-performing' | 'slow' | 'stall-body' | 'hang-before-performing' | 'answer-when-released';

interface KeyedResponse {
  readonly route: string;
  readonly body: string;
  response: { status: number; body: unknown } | null;
}

export class FakeVendor extends EventEmitter<{ performed: [VendorAction]; held: [string] }> {
  /** Every request received, per route, whatever became of it. */
  readonly requests = new Map<string, number>();
  /** Actions actually performed: a charge made, a call placed. */
  readonly actions: VendorAction[] = [];
  /** Every request, in arrival order, with what became of it. */
  readonly log: VendorRequest[] = [];
  private readonly byKey = new Map<string, KeyedResponse>();
  private readonly faults = new Map<string, Fault[]>();
  private readonly hanging = new Set<ServerResponse>();
  /** Answers held by `answer-when-released`, sent by `releaseAnswers()`. */
  private readonly heldAnswers = new Map<ServerResponse, () => void>();
  private server: Server | undefined;
  private nextId = 1;

  /** `latencyMs`: each request waits up to this long (at random) before acting and again before answering. */
  constructor(private readonly options: { readonly latencyMs?: number } = {}) {
    super();
  }

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return this.url;
  }

  get url(): string {
    const address = this.server?.address() as AddressInfo | null | undefined;
    if (!address) throw new Error('FakeVendor is not started.');
    return `http://127.0.0.1:${address.port}`;
  }

  /** The next requests to `route` get these faults, one per request, in order. */
  script(route: string, ...faults: Fault[]): void {
    this.faults.set(route, [...(this.faults.get(route) ?? []), ...faults]);
  }

  actionsOn(route: string): VendorAction[] {
    return this.actions.filter((action) => action.route === route);
  }

  requestsTo(route: string): number {
    return this.requests.get(route) ?? 0;
  }

  /**
   * Keys sent to `route` again after the vendor had taken a request with them (answered from its
   * idempotency store, refused as still in flight, or as a conflict), with how many requests each
   * got: calls the caller made twice. This vendor acts once per key whatever it is sent, so its
   * actions cannot show a second call; a vendor without idempotency keys would have acted again.
   */
  keysSentAgain(route: string): Map<string, number> {
    const taken = new Map<string, number>();
    for (const { route: requestRoute, idempotencyKey, handling } of this.log) {
      if (requestRoute !== route || idempotencyKey === null || handling === 'unavailable') continue;
      taken.set(idempotencyKey, (taken.get(idempotencyKey) ?? 0) + 1);
    }
    return new Map([...taken].filter(([, requests]) => requests > 1));
  }

  /** Resolves when the next request to `route` is held unperformed (`hang-before-performing`). */
  nextHeld(route: string): Promise<void> {
    return new Promise((resolve) => {
      const onHeld = (heldRoute: string) => {
        if (heldRoute !== route) return;
        this.off('held', onHeld);
        resolve();
      };
      this.on('held', onHeld);
    });
  }

  /** Resolves with the next action performed on `route`. */
  nextAction(route: string): Promise<VendorAction> {
    return new Promise((resolve) => {
      const onAction = (action: VendorAction) => {
        if (action.route !== route) return;
        this.off('performed', onAction);
        resolve(action);
      };
      this.on('performed', onAction);
    });
  }

  /** Sends every answer held by `answer-when-released` (to callers still connected); how many were sent. */
  releaseAnswers(): number {
    const held = [...this.heldAnswers];
    this.heldAnswers.clear();
    let sent = 0;
    for (const [res, answer] of held) {
      this.hanging.delete(res);
      if (res.destroyed) continue;
      answer();
      sent++;
    }
    return sent;
  }

  async stop(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method === 'GET' && req.url?.startsWith(LOOKUP_PREFIX)) return this.lookup(req, res);
    const receivedAt = Date.now();
    const route = `${req.method} ${req.url}`;
    this.requests.set(route, this.requestsTo(route) + 1);
    const text = await readText(req);
    const idempotencyKey = headerValue(req.headers['idempotency-key']);
    const logAs = (handling: VendorRequest['handling']) => this.log.push({ route, idempotencyKey, handling, receivedAt });

    const keyed = idempotencyKey ? this.byKey.get(idempotencyKey) : undefined;
    if (keyed) {
      if (keyed.route !== route || keyed.body !== text) {
        logAs('conflict');
        return reply(res, 422, { error: 'Keys for idempotent requests can only be used with the same parameters.' });
      }
      if (!keyed.response) {
        logAs('in-flight');
        return reply(res, 409, { error: 'A request with this idempotency key is still being processed.' });
      }
      logAs('replayed');
      return reply(res, keyed.response.status, keyed.response.body, { 'idempotent-replayed': 'true' });
    }

    const fault = this.faults.get(route)?.shift();
    if (fault === 'unavailable') {
      logAs('unavailable');
      return reply(res, 503, { error: 'temporarily unavailable; nothing was done' });
    }
    if (fault === 'hang-before-performing') {
      logAs('unavailable');
      this.hanging.add(res);
      this.emit('held', route);
      return;
    }
    const entry: KeyedResponse = { route, body: text, response: null };
    if (idempotencyKey) this.byKey.set(idempotencyKey, entry);
    if (fault === 'slow') await sleep(1_000);
    await this.jitter();
    const action: VendorAction = { route, id: `act_${this.nextId++}`, body: text ? JSON.parse(text) : null, at: new Date(), idempotencyKey };
    this.actions.push(action);
    logAs('performed');
    // Stored as soon as it is done, like Stripe: a repeat gets it even if this response never arrives.
    entry.response = { status: 200, body: { id: action.id, status: 'done' } };
    this.emit('performed', action);
    if (fault === 'hang-after-performing') {
      this.hanging.add(res); // the action happened; the caller never hears back
      return;
    }
    if (fault === 'answer-when-released') {
      this.hanging.add(res); // the action happened; the caller hears back when the harness says
      const { status, body } = entry.response;
      this.heldAnswers.set(res, () => reply(res, status, body));
      return;
    }
    if (fault === 'stall-body') {
      this.hanging.add(res); // the action happened; the answer starts and never ends
      const text = JSON.stringify(entry.response.body);
      res.writeHead(entry.response.status, { 'content-type': 'application/json', 'content-length': String(text.length) });
      res.write(text.slice(0, Math.floor(text.length / 2)));
      return;
    }
    await this.jitter(); // the window in which a worker dies after the vendor acted
    if (!res.destroyed) reply(res, entry.response.status, entry.response.body);
  }

  /**
   * `GET /v1/requests/<idempotency key>`: what became of a request sent with that key, as vendors
   * that dedup on a key let you ask. 200 with the stored response, 404 when no request with the key
   * ever arrived, 409 while it is still being processed, 503 when scripted (`script(LOOKUP_ROUTE, 'unavailable')`);
   * never, when scripted `hang-before-performing` (the asker waits; `nextHeld(LOOKUP_ROUTE)` says when).
   */
  private async lookup(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.requests.set(LOOKUP_ROUTE, this.requestsTo(LOOKUP_ROUTE) + 1);
    req.resume();
    const fault = this.faults.get(LOOKUP_ROUTE)?.shift();
    if (fault === 'unavailable') return reply(res, 503, { error: 'lookup temporarily unavailable' });
    if (fault === 'hang-before-performing') {
      this.hanging.add(res);
      this.emit('held', LOOKUP_ROUTE);
      return;
    }
    const key = decodeURIComponent(req.url!.slice(LOOKUP_PREFIX.length));
    const keyed = this.byKey.get(key);
    if (!keyed) return reply(res, 404, { error: 'no request with this idempotency key' });
    if (!keyed.response) return reply(res, 409, { error: 'a request with this key is still being processed' });
    return reply(res, 200, { status: 'performed', response: keyed.response.body });
  }

  private async jitter(): Promise<void> {
    if (this.options.latencyMs) await sleep(Math.random() * this.options.latencyMs);
  }
}

/** Where the vendor answers "what became of the request with this key?". */
export const LOOKUP_ROUTE = 'GET /v1/requests';
const LOOKUP_PREFIX = '/v1/requests/';

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function headerValue(value: string | string[] | undefined): string | null {
  return (Array.isArray(value) ? value[0] : value) ?? null;
}

async function readText(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function reply(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}
