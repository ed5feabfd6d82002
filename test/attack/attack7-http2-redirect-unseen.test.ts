/**
 * Attack 7: 7d15e93 tells a redirected write from the diagnostics channels of undici (fetch) and
 * node:http. A write sent over node:http2 publishes on neither: a POST the vendor acted on and
 * answered 303, followed (as got with `http2: true`, or an HTTP/2-only vendor SDK, does) to a host
 * that refuses the connection, ends in `connect ECONNREFUSED` (syscall connect): "nothing was sent",
 * released, charged again on every retry (the attack5 c824185 / attack6 576fd9a double call again).
 *
 * Real Postgres, real Temporal, real sockets (an h2c vendor); no classifier of the user's.
 */
import { connect, createServer } from 'node:http2';
import type { Http2Server } from 'node:http2';
import { request as httpRequest } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idempotencyInterceptors } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

const charges = new Map<string, number>();
let vendor: Http2Server;
let vendorUrl: string;
let closedPort: number;

beforeAll(async () => {
  closedPort = await new Promise<number>((resolve) => {
    const probe = createTcpServer();
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
  vendor = createServer();
  vendor.on('stream', (stream, headers) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => {
      const { order } = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { order: string };
      if (headers[':method'] === 'POST') charges.set(order, (charges.get(order) ?? 0) + 1); // the charge is made
      // Post/redirect/get: charged, here is the receipt (on a host that is down).
      stream.respond({ ':status': 303, location: `http://127.0.0.1:${closedPort}/receipts/ch_${order}` });
      stream.end();
    });
  });
  await new Promise<void>((resolve) => vendor.listen(0, '127.0.0.1', resolve));
  vendorUrl = `http://127.0.0.1:${(vendor.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => vendor.close(resolve));
});

/** POST over HTTP/2, following a 303 with a GET (on HTTP/1.1 when the next host is another origin), as got does; errors are the last hop's. */
function postOverHttp2(url: string, body: unknown): Promise<{ status: number }> {
  return new Promise((resolve, reject) => {
    const session = connect(url);
    session.on('error', reject);
    const stream = session.request({ ':method': 'POST', ':path': '/v1/charges', 'content-type': 'application/json' });
    stream.on('error', reject);
    stream.on('response', (headers) => {
      const status = Number(headers[':status']);
      const location = headers.location;
      stream.resume();
      session.close();
      if (status >= 300 && status < 400 && typeof location === 'string') {
        const next = httpRequest(new URL(location, url), { method: 'GET' }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
        });
        next.on('error', reject);
        next.end();
        return;
      }
      resolve({ status });
    });
    stream.end(JSON.stringify(body));
  });
}

type Outcome = { result?: unknown; failedWith?: string };

function outcomeOf(promise: Promise<unknown>): Promise<Outcome> {
  return promise.then(
    (result) => ({ result }),
    (error: unknown) => ({ failedWith: (error as { cause?: { cause?: { type?: string } } }).cause?.cause?.type ?? String(error) }),
  );
}

describe('a POST over HTTP/2 the vendor acted on and answered 303, then the next hop could not connect', () => {
  it('is charged once', async () => {
    const order = uniqueName('h2');
    const taskQueue = uniqueName('tq');
    const activities = { chargeCard: (o: string) => postOverHttp2(vendorUrl, { order: o }) };
    const interceptors = { activity: idempotencyInterceptors({ store: schema.store }) };
    const outcome = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      const handle = await temporal.client.workflow.start('callActivity', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'chargeCard', args: [order], maximumAttempts: 3 }],
      });
      return outcomeOf(handle.result());
    });
    // Before a fix: charges 3: the HTTP/2 POST is seen by no channel, each attempt's ECONNREFUSED (syscall connect) is
    // "nothing was sent", the claim is released, and the card is charged again.
    expect({ charges: charges.get(order) ?? 0, outcome }).toMatchObject({ charges: 1 });
  });
});
