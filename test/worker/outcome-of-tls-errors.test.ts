/**
 * Found in review: TLS errors raised AFTER the request left count as "nothing was sent". Node's `https`
 * (what stripe-node's and axios' Node transports are built on; the DESIGN table names Node's
 * `http`) reports a TLS record it cannot read as an OpenSSL error: `ERR_SSL_*`, no syscall. None is
 * on transportVerdict's in-flight lists, so the default classifier says definite: release, retry,
 * charge again. Both errors below are raised on a connection whose request was written, read and
 * acted on by the vendor:
 *
 *  - ERR_SSL_WRONG_VERSION_NUMBER: a load balancer in front of the vendor gives up on the backend's
 *    answer and writes its own plain-text `502 Bad Gateway` on the TLS connection (a known
 *    misconfiguration; the same code is raised by a TLS handshake to a plain-text port, before
 *    anything is sent, which is the only case the verdict imagines);
 *  - ERR_SSL_DECRYPTION_FAILED_OR_BAD_RECORD_MAC: a middlebox corrupts one record of the answer.
 *
 * Real Postgres, real Temporal, real TLS over real sockets; the "load balancer" is a TCP proxy.
 */
import { createServer as createHttpsServer, request as httpsRequest } from 'node:https';
import type { Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { connect, createServer as createTcpServer } from 'node:net';
import type { AddressInfo, Server as TcpServer, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idempotencyInterceptors } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

/** A throwaway self-signed certificate for 127.0.0.1 (test only, valid until 2126). */
const KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgY9ssQRFldiScxEqm
yDf06hg8aVT8lWJ42DYY/SuYgQOhRANCAAQDsvVB24llfLUtG/71a/6BcIqAE1af
uwPw2PQZE2fh0WUC/4zY10wDediF7LQvvlwQvpvr1jWyV9lLIBrX3hif
-----END PRIVATE KEY-----`;
const CERT = `-----BEGIN CERTIFICATE-----
MIIBpDCCAUqgAwIBAgIULNac1UkrmpmEb1w+Vc7s71oJxy8wCgYIKoZIzj0EAwIw
HjEcMBoGA1UEAwwTYXR0YWNrNSB0ZXN0IHZlbmRvcjAgFw0yNjEyMDIwNzA3NDha
GA8yMTI2MTEwODA3MDc0OFowHjEcMBoGA1UEAwwTYXR0YWNrNSB0ZXN0IHZlbmRv
cjBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABAOy9UHbiWV8tS0b/vVr/oFwioAT
Vp+7A/DY9BkTZ+HRZQL/jNjXTAN52IXstC++XBC+m+vWNbJX2UsgGtfeGJ+jZDBi
MB0GA1UdDgQWBBRnFJvR27NyUAfxFPix6lbBsHirdzAfBgNVHSMEGDAWgBRnFJvR
27NyUAfxFPix6lbBsHirdzAPBgNVHRMBAf8EBTADAQH/MA8GA1UdEQQIMAaHBH8A
AAEwCgYIKoZIzj0EAwIDSAAwRQIgPLYKc+fiBN7CxesjQc6TFSbvpWY+4bkNgw5Q
7HdZwVQCIQCmO0Wg/dy8xbuhqXhT3oagC6PDAz+9cIvxW8D0cg3PJw==
-----END CERTIFICATE-----`;

const charges = new Map<string, number>();
/** Orders whose answer the proxy mangles, and how. */
const mangle = new Map<string, 'plaintext-502' | 'corrupt-record'>();
let vendor: Server;
let proxy: TcpServer;
let proxyPort: number;
/** The order the vendor just charged (the proxy mangles the next bytes of the answer to it). */
let justCharged: string | undefined;
const proxied = new Set<Socket>();

function charged(order: string): number {
  return charges.get(order) ?? 0;
}

beforeAll(async () => {
  vendor = createHttpsServer({ key: KEY, cert: CERT }, (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const { order } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { order: string };
      charges.set(order, charged(order) + 1); // the charge is made
      justCharged = order;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: `ch_${order}`, status: 'succeeded', receipt: 'r'.repeat(4_000) }));
    });
  });
  await new Promise<void>((resolve) => vendor.listen(0, '127.0.0.1', resolve));
  proxy = createTcpServer((client: Socket) => {
    const upstream = connect((vendor.address() as AddressInfo).port, '127.0.0.1');
    proxied.add(client).add(upstream);
    client.pipe(upstream);
    upstream.on('data', (data: Buffer) => {
      const how = justCharged === undefined ? undefined : mangle.get(justCharged);
      if (!how) return void client.write(data);
      justCharged = undefined;
      if (how === 'plaintext-502') {
        // The balancer's own answer, in plain text, on the TLS connection.
        client.end('HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n');
        upstream.destroy();
        return;
      }
      const corrupted = Buffer.from(data);
      corrupted[corrupted.length >> 1]! ^= 0xff; // inside the answer's ciphertext
      client.write(corrupted);
    });
    upstream.on('end', () => client.end());
    client.on('error', () => undefined);
    upstream.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyPort = (proxy.address() as AddressInfo).port;
});

afterAll(async () => {
  for (const socket of proxied) socket.destroy();
  vendor.closeAllConnections();
  await new Promise((resolve) => vendor.close(resolve));
  await new Promise((resolve) => proxy.close(resolve));
});

/** A user's plain activity: POST with node:https (trusting the vendor's certificate), no classifier of its own. */
function chargeWithHttps(order: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      { host: '127.0.0.1', port: proxyPort, path: '/v1/charges', method: 'POST', ca: CERT, agent: false, headers: { 'content-type': 'application/json' } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ order }));
  });
}

async function run(order: string): Promise<{ result?: unknown; failedWith?: string }> {
  const taskQueue = uniqueName('tq');
  const activities = { chargeCard: chargeWithHttps };
  const interceptors = { activity: idempotencyInterceptors({ store: schema.store }) };
  return temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
    const handle = await temporal.client.workflow.start('callActivity', {
      taskQueue,
      workflowId: uniqueName('wf'),
      args: [{ activity: 'chargeCard', args: [order], maximumAttempts: 3 }],
    });
    return handle.result().then(
      (result) => ({ result }),
      (error: unknown) => ({ failedWith: (error as { cause?: { cause?: { type?: string } } }).cause?.cause?.type ?? String(error) }),
    );
  });
}

describe('a TLS answer that could not be read, after the vendor acted on the request', () => {
  it('a balancer answers 502 in plain text on the TLS connection (ERR_SSL_WRONG_VERSION_NUMBER): charged once', async () => {
    const order = uniqueName('plaintext-502');
    mangle.set(order, 'plaintext-502');
    const outcome = await run(order);
    // Before a fix: charges 3, one per attempt: each attempt's claim released as "nothing was sent".
    expect({ charges: charged(order), outcome }).toMatchObject({ charges: 1 });
  });

  it('a middlebox corrupts a record of the answer (ERR_SSL_DECRYPTION_FAILED_OR_BAD_RECORD_MAC): charged once', async () => {
    const order = uniqueName('corrupt-record');
    mangle.set(order, 'corrupt-record');
    const outcome = await run(order);
    expect({ charges: charged(order), outcome }).toMatchObject({ charges: 1 });
  });
});
