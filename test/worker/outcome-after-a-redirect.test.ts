/**
 * Found in review: "an error raised by `connect` (any code) proves nothing was sent" (dd1ca8e) is false for
 * one `fetch`: Node's fetch follows redirects by default, so one call is several requests, and the
 * error it ends with belongs to the LAST hop. A vendor that acts on the POST and answers
 * `303 See Other` (the post/redirect/get pattern: "charged, here is the receipt") with a Location
 * that cannot be reached makes fetch fail with `TypeError: fetch failed`, caused by
 * `connect ECONNREFUSED` (or `getaddrinfo ENOTFOUND` for a receipts host whose DNS is down).
 * transportVerdict skips every link raised by connect/getaddrinfo as "never sent" and returns
 * definite: the claim is released, Temporal retries, the card is charged again.
 *
 * Same for the errors undici raises on a redirect it will not follow, which carry no code at all and
 * fall to "anything else: definite": `redirect count exceeded` (a redirect loop after the charge)
 * and, with `redirect: 'error'` (set precisely to avoid following one), `unexpected redirect`. Each
 * is raised after a response to the POST came back, so the POST reached the vendor.
 *
 * Real Postgres, real Temporal, real sockets and Node's own fetch; no classifier of the user's.
 */
import diagnosticsChannel from 'node:diagnostics_channel';
import { Agent, createServer, request as httpRequest } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idempotencyInterceptors } from '../../src/index.js';
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
/** Set by `holdNextCharge()`: the next charge to /v1/charges/held is made, and answered when the test says. */
let holdArrived: (() => void) | undefined;
let answerHeld: () => void = () => undefined;

function holdNextCharge(): Promise<void> {
  return new Promise((resolve) => (holdArrived = resolve));
}

function charged(order: string): number {
  return charges.get(order) ?? 0;
}

beforeAll(async () => {
  closedPort = await refusedPort();
  vendor = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'POST') {
      // The receipt page (a redirect loop's next hop): no charge here.
      res.writeHead(307, { location: req.url ?? '/' });
      return void res.end();
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const { order } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { order: string };
      charges.set(order, charged(order) + 1); // the charge is made
      const answer = () => {
        if (req.url === '/v1/charges/ok') {
          res.writeHead(200);
        } else if (req.url === '/v1/charges/receipt-host-down' || req.url === '/v1/charges/held') {
          res.writeHead(303, { location: `http://127.0.0.1:${closedPort}/receipts/ch_${order}` });
        } else {
          // A receipt URL behind a misconfigured redirect: GET /receipts/… redirects to itself.
          res.writeHead(303, { location: `/receipts/ch_${order}` });
        }
        res.end();
      };
      // Held once: a second charge (a retry) is answered at once, so a double charge fails the test, not its timeout.
      if (req.url !== '/v1/charges/held' || !holdArrived) return answer();
      answerHeld = answer;
      holdArrived();
      holdArrived = undefined;
    });
  });
  await new Promise<void>((resolve) => vendor.listen(0, '127.0.0.1', resolve));
  vendorUrl = `http://127.0.0.1:${(vendor.address() as AddressInfo).port}`;
});

afterAll(async () => {
  vendor.closeAllConnections();
  await new Promise((resolve) => vendor.close(resolve));
});

/** A user's plain activity: POST with Node's fetch, as the README's examples do. */
async function chargeWithFetch(url: string, order: string, init: RequestInit = {}): Promise<unknown> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ order }), ...init });
  return { status: response.status };
}

/** The same POST with `node:http` on `agent`, following a 303 with a GET as follow-redirects does. */
function chargeWithHttp(agent: Agent, url: string, order: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const hop = (target: URL, method: string, body?: string) => {
      const request = httpRequest(target, { method, agent }, (response) => {
        response.resume();
        if (response.statusCode === 303 && response.headers.location) return hop(new URL(response.headers.location, target), 'GET');
        response.on('end', () => resolve({ status: response.statusCode }));
      });
      request.on('error', reject);
      request.end(body);
    };
    hop(new URL(url), 'POST', JSON.stringify({ order }));
  });
}

type Outcome = { result?: unknown; failedWith?: string };

/** Starts the workflow that calls `chargeCard(...args)` on `taskQueue`, up to 3 attempts; resolves with how it ended. */
async function charge(taskQueue: string, ...args: unknown[]): Promise<Outcome> {
  const handle = await temporal.client.workflow.start('callActivity', {
    taskQueue,
    workflowId: uniqueName('wf'),
    args: [{ activity: 'chargeCard', args, maximumAttempts: 3 }],
  });
  return handle.result().then(
    (result) => ({ result }),
    (error: unknown) => ({ failedWith: (error as { cause?: { cause?: { type?: string } } }).cause?.cause?.type ?? String(error) }),
  );
}

function workerOptions(taskQueue: string, chargeCard: (...args: never[]) => Promise<unknown>) {
  return { taskQueue, activities: { chargeCard }, interceptors: { activity: idempotencyInterceptors({ store: schema.store }) } };
}

async function run(activity: (order: string) => Promise<unknown>, order: string): Promise<Outcome> {
  const taskQueue = uniqueName('tq');
  return temporal.withWorker(workerOptions(taskQueue, activity), () => charge(taskQueue, order));
}

describe('a fetch whose POST was answered with a redirect, then failed on a later hop: the charge was made', () => {
  it('303 to a receipts host that refuses the connection (fetch failed ← connect ECONNREFUSED): charged once', async () => {
    const order = uniqueName('receipt-host-down');
    const outcome = await run((o) => chargeWithFetch(`${vendorUrl}/v1/charges/receipt-host-down`, o), order);
    // Before a fix: charges 3 (one per attempt): each attempt's claim released as "nothing was sent", each attempt charged.
    expect({ charges: charged(order), outcome }).toMatchObject({ charges: 1 });
  });

  it('303 into a redirect loop (fetch failed ← redirect count exceeded): charged once', async () => {
    const order = uniqueName('redirect-loop');
    const outcome = await run((o) => chargeWithFetch(`${vendorUrl}/v1/charges/redirect-loop`, o), order);
    expect({ charges: charged(order), outcome }).toMatchObject({ charges: 1 });
  });

  it("303 with redirect: 'error' (fetch failed ← unexpected redirect): charged once", async () => {
    const order = uniqueName('redirect-error');
    const outcome = await run((o) => chargeWithFetch(`${vendorUrl}/v1/charges/redirect-error`, o, { redirect: 'error' }), order);
    expect({ charges: charged(order), outcome }).toMatchObject({ charges: 1 });
  });
});

describe('the redirect watch belongs to its worker', () => {
  it('listens only while one of its attempts runs: a process that makes workers on and on does not pile up listeners', async () => {
    const channels = ['undici:request:create', 'undici:request:headers', 'http.client.request.start', 'http.client.response.finish'];
    const listening = () => channels.filter((name) => diagnosticsChannel.channel(name).hasSubscribers);
    let duringTheCall: string[] = [];
    const order = uniqueName('listening');
    await run(async (o) => {
      duringTheCall = listening();
      return chargeWithFetch(`${vendorUrl}/v1/charges/receipt-host-down`, o);
    }, order);
    expect({ duringTheCall, afterwards: listening() }).toEqual({ duringTheCall: channels, afterwards: [] });
    expect(charged(order)).toBe(1);
  });

  describe('a POST held at the vendor, then answered 303 to a host that is down, after other attempts started and ended meanwhile: charged once', () => {
    const chargeAt = (path: string, order: string) => chargeWithFetch(`${vendorUrl}${path}`, order);

    /** Charges `order` on `heldQueue`; while the vendor holds it, three other charges run whole on `otherQueue`. */
    async function chargeHeldWhileOthersRun(heldQueue: string, otherQueue: string, order: string): Promise<Outcome> {
      const arrived = holdNextCharge();
      const held = charge(heldQueue, '/v1/charges/held', order);
      await arrived;
      // The other queue's watch goes on and off three times.
      for (let i = 0; i < 3; i++) await charge(otherQueue, '/v1/charges/ok', uniqueName('other'));
      answerHeld();
      return held;
    }

    it('another worker in the process (its own watch, its own task queue) ran whole attempts meanwhile', async () => {
      const order = uniqueName('two-workers');
      const [queueA, queueB] = [uniqueName('tq-a'), uniqueName('tq-b')];
      const outcome = await temporal.withWorker(workerOptions(queueA, chargeAt), () =>
        temporal.withWorker(workerOptions(queueB, chargeAt), () => chargeHeldWhileOthersRun(queueA, queueB, order)),
      );
      expect({ charges: charged(order), outcome }).toMatchObject({ charges: 1 });
    });

    it('other attempts of the same worker started and ended meanwhile', async () => {
      const order = uniqueName('same-worker');
      const taskQueue = uniqueName('tq');
      const outcome = await temporal.withWorker(workerOptions(taskQueue, chargeAt), () => chargeHeldWhileOthersRun(taskQueue, taskQueue, order));
      expect({ charges: charged(order), outcome }).toMatchObject({ charges: 1 });
    });

    it('node:http on a kept-alive socket an earlier attempt opened (the watch off, then on again, in between)', async () => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const order = uniqueName('keep-alive');
      const taskQueue = uniqueName('tq');
      const chargeOnSocket = (path: string, o: string) => chargeWithHttp(agent, `${vendorUrl}${path}`, o);
      const outcome = await temporal.withWorker(workerOptions(taskQueue, chargeOnSocket), async () => {
        await charge(taskQueue, '/v1/charges/ok', uniqueName('first')); // opens the socket; the watch goes off after
        return charge(taskQueue, '/v1/charges/receipt-host-down', order);
      });
      agent.destroy();
      expect({ charges: charged(order), outcome }).toMatchObject({ charges: 1 });
    });
  });
});
