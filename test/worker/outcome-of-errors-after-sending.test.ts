/**
 * Found in review: errors Node's fetch and http raise AFTER the request went out are still classed
 * "nothing happened" (definite), so the claim is released and Temporal's retry charges again.
 *
 * The vendor below is a real Node HTTP server: it reads the whole request, charges, and answers.
 * The answer is one the client cannot parse, as real ones are:
 *  - response headers over Node's 16 KiB limit (a big Set-Cookie / trace header from a vendor or its
 *    CDN): fetch raises UND_ERR_HEADERS_OVERFLOW, http raises HPE_HEADER_OVERFLOW;
 *  - a malformed response from a proxy in between: HPE_INVALID_HEADER_TOKEN, HPE_INVALID_CONSTANT;
 *  - a body whose gzip is corrupt mid-way: fetch raises `terminated` caused by Z_DATA_ERROR.
 * None carries a syscall, none is on the in-flight list, so transportVerdict says "not sent" and
 * the default classifier says definite: release, retry, charge again. DESIGN.md's table says an
 * error while "the request or response was in flight" is ambiguous.
 *
 * Real Postgres, real Temporal, real sockets.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { request as httpRequest } from 'node:http';
import { Socket, createServer as createTcpServer } from 'node:net';
import type { AddressInfo, Server as TcpServer } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idempotencyInterceptors } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

/** Charges per order, counted when the vendor has read the whole request and acted. */
const charges = new Map<string, number>();
let vendor: Server;
let proxy: TcpServer;
let vendorUrl: string;
let proxyUrl: string;

function charged(order: string): number {
  return charges.get(order) ?? 0;
}

beforeAll(async () => {
  vendor = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const { order } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { order: string };
      charges.set(order, charged(order) + 1); // the charge is made
      const body = JSON.stringify({ id: `ch_${order}`, status: 'succeeded' });
      if (req.url === '/v1/charges/big-headers') {
        res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': `session=${'a'.repeat(20_000)}` });
        return void res.end(body);
      }
      if (req.url === '/v1/charges/corrupt-gzip') {
        const gz = gzipSync(Buffer.from(body.repeat(200)));
        gz.fill(0x41, 40, 80); // flipped bits mid-stream
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': String(gz.length) });
        return void res.end(gz);
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => vendor.listen(0, '127.0.0.1', resolve));
  vendorUrl = `http://127.0.0.1:${(vendor.address() as AddressInfo).port}`;
  // A broken proxy in front of the vendor: passes the request on, mangles the answer's headers.
  proxy = createTcpServer((client: Socket) => {
    const upstream = new Socket();
    upstream.connect((vendor.address() as AddressInfo).port, '127.0.0.1');
    client.pipe(upstream);
    let first = true;
    upstream.on('data', (data: Buffer) => {
      if (!first) return;
      first = false;
      client.end(data.toString('latin1').replace('content-type: application/json', 'content-type: application/json\x01'), 'latin1');
    });
    client.on('error', () => undefined);
    upstream.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});

afterAll(async () => {
  vendor.closeAllConnections();
  await new Promise((resolve) => vendor.close(resolve));
  await new Promise((resolve) => proxy.close(resolve));
});

/** A user's plain activity: POST with fetch, as the README's examples do; no classifier of its own. */
async function chargeWithFetch(url: string, order: string): Promise<unknown> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ order }) });
  return response.json();
}

/** The same with node:http. */
function chargeWithHttp(url: string, order: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(JSON.stringify({ order }));
  });
}

async function run(activity: (order: string) => Promise<unknown>, order: string): Promise<{ result?: unknown; failedWith?: string }> {
  const taskQueue = uniqueName('tq');
  const activities = { chargeCard: activity };
  const interceptors = { activity: idempotencyInterceptors({ store: schema.store }) };
  return temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
    const handle = await temporal.client.workflow.start('callActivity', {
      taskQueue,
      workflowId: uniqueName('wf'),
      args: [{ activity: 'chargeCard', args: [order], maximumAttempts: 3 }],
    });
    return handle.result().then(
      (result) => ({ result }),
      (error: unknown) => ({ failedWith: (error as { cause?: { cause?: { type?: string; message?: string } } }).cause?.cause?.type ?? String(error) }),
    );
  });
}

describe('a response that arrived but could not be parsed: the charge was made', () => {
  it('fetch, response headers over 16 KiB (UND_ERR_HEADERS_OVERFLOW): charged once, not once per attempt', async () => {
    const order = uniqueName('big-headers-fetch');
    const outcome = await run((o) => chargeWithFetch(`${vendorUrl}/v1/charges/big-headers`, o), order);
    expect({ charges: charged(order), outcome }).toMatchObject({ charges: 1 });
  });

  it('http, response headers over 16 KiB (HPE_HEADER_OVERFLOW): charged once, not once per attempt', async () => {
    const order = uniqueName('big-headers-http');
    const outcome = await run((o) => chargeWithHttp(`${vendorUrl}/v1/charges/big-headers`, o), order);
    expect({ charges: charged(order), outcome }).toMatchObject({ charges: 1 });
  });

  it('fetch through a proxy that mangles a response header (HPE_INVALID_HEADER_TOKEN): charged once', async () => {
    const order = uniqueName('proxy-fetch');
    const outcome = await run((o) => chargeWithFetch(`${proxyUrl}/v1/charges`, o), order);
    expect({ charges: charged(order), outcome }).toMatchObject({ charges: 1 });
  });

  it('fetch, a gzip body corrupt mid-way (terminated / Z_DATA_ERROR): charged once', async () => {
    const order = uniqueName('corrupt-gzip');
    const outcome = await run((o) => chargeWithFetch(`${vendorUrl}/v1/charges/corrupt-gzip`, o), order);
    expect({ charges: charged(order), outcome }).toMatchObject({ charges: 1 });
  });
});
