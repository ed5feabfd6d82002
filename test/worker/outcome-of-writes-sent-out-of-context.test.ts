/**
 * Found in review: a0e351d makes a failure ambiguous when "the attempt sent a write request through fetch"
 * before it, seen on undici's diagnostics channel `undici:client:sendHeaders` and attributed to the
 * attempt through the activity's AsyncLocalStorage Context. Two ways a write that went out is NOT
 * seen, so the double charge c824185 fixed (POST acted on, answered 303, next hop cannot connect:
 * `connect ECONNREFUSED`, classed "nothing was sent", released, charged again on every retry) is
 * still there:
 *
 * 1. The write did not go through undici. Node's `http`/`https` publish nothing on that channel, and
 *    most vendor SDKs and HTTP clients sit on them: axios (twilio-node, @sendgrid/client and many
 *    others) follows redirects by default through follow-redirects; stripe-node, got, node-fetch v2
 *    use `http` too. Checked by hand with axios 1.x: `axios.post(url)` answered 303 to a host that
 *    refuses ends in `AxiosError` code ECONNREFUSED ← `connect ECONNREFUSED` (syscall connect), and
 *    the channel saw nothing. (undici's own `request()` with `maxRedirections` IS seen, but fails with
 *    a plain `Error` ECONNREFUSED, not `TypeError: fetch failed`, so `isFetchFailure` is false and it
 *    is classed definite all the same.) The client below follows the redirect exactly as
 *    follow-redirects does, on plain `node:http`.
 *
 * 2. The write went through fetch, but not in the attempt's async context. A module-level rate
 *    limiter (p-queue, bottleneck: checked by hand, both run a queued task in the async context of
 *    the task that finished before it) sends attempt B's POST from attempt A's context: the channel
 *    attributes B's POST to A (which already had one), and B's fetch failure is classed "nothing
 *    was sent".
 *
 * Real Postgres, real Temporal, real sockets; no classifier of the user's.
 */
import { createServer, request as httpRequest } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idempotencyHeaders, idempotencyInterceptors } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { refusedPort } from '../support/refused-port.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

const charges = new Map<string, number>();
let vendor: Server;
let vendorUrl: string;
/** A port nothing listens on: the receipts host is down. */
let closedPort: number;
/** Resolved when a request to /v1/charges/slow is waiting for its answer. */
let slowArrived: () => void = () => undefined;
let releaseSlow: () => void = () => undefined;

function charged(order: string): number {
  return charges.get(order) ?? 0;
}

beforeAll(async () => {
  closedPort = await refusedPort();
  vendor = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const { order } = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { order: string };
      charges.set(order, charged(order) + 1); // the charge is made
      if (req.url === '/v1/charges/slow') {
        slowArrived();
        releaseSlow = () => void res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"ch_slow"}');
        return;
      }
      // Post/redirect/get: charged, here is the receipt (on a host that is down).
      res.writeHead(303, { location: `http://127.0.0.1:${closedPort}/receipts/ch_${order}` });
      res.end();
    });
  });
  await new Promise<void>((resolve) => vendor.listen(0, '127.0.0.1', resolve));
  vendorUrl = `http://127.0.0.1:${(vendor.address() as AddressInfo).port}`;
});

afterAll(async () => {
  vendor.closeAllConnections();
  await new Promise((resolve) => vendor.close(resolve));
});

/** POST on node:http, following a 303 with a GET as follow-redirects (axios' default) does; its errors are the last hop's. */
function postFollowingRedirects(url: string, body: unknown): Promise<{ status: number }> {
  return new Promise((resolve, reject) => {
    const hop = (target: URL, method: string, payload: string | undefined, hops: number) => {
      const req = httpRequest(target, { method, headers: payload ? { 'content-type': 'application/json' } : {} }, (res) => {
        res.resume();
        const location = res.headers.location;
        if (res.statusCode && res.statusCode >= 300 && res.statusCode < 400 && location && hops < 5) {
          return hop(new URL(location, target), res.statusCode === 303 ? 'GET' : method, res.statusCode === 303 ? undefined : payload, hops + 1);
        }
        res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
      });
      req.on('error', reject);
      req.end(payload);
    };
    hop(new URL(url), 'POST', JSON.stringify(body), 0);
  });
}

/** A module-level limiter, one request at a time, that runs a queued task when the one before it ends (p-queue, bottleneck). */
const queued: Array<() => void> = [];
let active = 0;
function limited<T>(task: () => Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const start = () => {
      active++;
      task()
        .then(resolve, reject)
        .finally(() => {
          active--;
          queued.shift()?.();
        });
    };
    if (active === 0) start();
    else queued.push(start);
  });
}

async function fetchPost(url: string, order: string, headers: Record<string, string> = {}): Promise<unknown> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ order }) });
  return { status: response.status, body: await response.text() };
}

type Outcome = { result?: unknown; failedWith?: string };

function outcomeOf(promise: Promise<unknown>): Promise<Outcome> {
  return promise.then(
    (result) => ({ result }),
    (error: unknown) => ({ failedWith: (error as { cause?: { cause?: { type?: string } } }).cause?.cause?.type ?? String(error) }),
  );
}

describe('a POST the vendor acted on and answered 303, then the next hop could not connect', () => {
  it('sent by an http-based client that follows redirects (axios, follow-redirects): charged once', async () => {
    const order = uniqueName('http-client');
    const taskQueue = uniqueName('tq');
    const activities = { chargeCard: (o: string) => postFollowingRedirects(`${vendorUrl}/v1/charges`, { order: o }) };
    const interceptors = { activity: idempotencyInterceptors({ store: schema.store }) };
    const outcome = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      const handle = await temporal.client.workflow.start('callActivity', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'chargeCard', args: [order], maximumAttempts: 3 }],
      });
      return outcomeOf(handle.result());
    });
    // Before a fix: charges 3: each attempt ends in ECONNREFUSED (syscall connect) "nothing was sent", released, charged again.
    expect({ charges: charged(order), outcome }).toMatchObject({ charges: 1 });
  });

  // A limiter that runs a queued task in the async context of the task before it hides which attempt sent a
  // request: the library then knows the request by the Idempotency-Key it carries (as idempotencyHeaders() sets
  // it, as the README asks). A keyless write sent that way cannot be told apart: README Traps says so.
  it('sent through fetch by a rate limiter shared by the worker (p-queue, bottleneck), with its Idempotency-Key: charged once', async () => {
    const slowOrder = uniqueName('slow');
    const order = uniqueName('queued');
    const taskQueue = uniqueName('tq');
    const arrived = new Promise<void>((resolve) => (slowArrived = resolve));
    const activities = {
      chargeCard: (o: string, path: string) => {
        const headers = idempotencyHeaders(); // read in the activity, before the limiter loses its context
        return limited(() => fetchPost(`${vendorUrl}${path}`, o, headers));
      },
    };
    const interceptors = { activity: idempotencyInterceptors({ store: schema.store }) };
    const outcome = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      // Attempt A holds the limiter: its vendor answers slowly.
      const slow = await temporal.client.workflow.start('callActivity', {
        taskQueue,
        workflowId: uniqueName('wf-slow'),
        args: [{ activity: 'chargeCard', args: [slowOrder, '/v1/charges/slow'], maximumAttempts: 1 }],
      });
      await arrived;
      // Attempt B's charge queues behind it, and is sent when A's ends: from A's async context.
      const handle = await temporal.client.workflow.start('callActivity', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'chargeCard', args: [order, '/v1/charges'], maximumAttempts: 3 }],
      });
      for (let i = 0; i < 100 && queued.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(queued.length).toBe(1);
      releaseSlow();
      await slow.result();
      return outcomeOf(handle.result());
    });
    // Before a fix: charges 2: attempt 1's POST is put down to attempt A, its fetch failure (← connect ECONNREFUSED)
    // is "nothing was sent", the claim is released, and attempt 2 (alone in the limiter, so seen) charges again.
    expect({ charges: charged(order), outcome }).toMatchObject({ charges: 1 });
  });
});
