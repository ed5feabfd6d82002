/**
 * The default answer to "did anything happen?", from real errors raised by
 * Node's fetch (undici) and http against a local server that misbehaves the
 * way networks do: when the request may have reached the vendor, ambiguous;
 * when it provably never left, definite.
 */
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NotSentError, OutcomeUnknownError } from '../../src/index.js';
import { classifyOutcome } from '../../src/worker/outcome-classification.js';
import { freePort } from '../../dev/free-port.js';

let server: Server;
let base: string;
beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/reset') return void req.socket.destroy(); // the request arrived; the answer never does
      if (req.url === '/stall-body') {
        res.writeHead(200, { 'content-length': '100' });
        return void res.write('{"id":');
      }
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

const notCancelled = { isAmbiguous: undefined, cancelled: undefined };

async function errorOf(operation: () => Promise<unknown>): Promise<unknown> {
  return operation().then(
    () => {
      throw new Error('expected the operation to fail');
    },
    (error: unknown) => error,
  );
}

describe('fetch (undici)', () => {
  it('definite: the connection was refused, nothing was sent', async () => {
    const error = await errorOf(async () => fetch(`http://127.0.0.1:${await freePort()}/charge`, { method: 'POST', body: '{}' }));
    expect(classifyOutcome(error, notCancelled)).toMatchObject({ ambiguous: false });
  });

  it('definite: the host name does not resolve', async () => {
    const error = await errorOf(() => fetch('http://no-such-host.invalid/charge', { method: 'POST', body: '{}' }));
    expect(classifyOutcome(error, notCancelled)).toMatchObject({ ambiguous: false });
  });

  it('ambiguous: the server closed the socket after the request arrived', async () => {
    const error = await errorOf(() => fetch(`${base}/reset`, { method: 'POST', body: '{}' }));
    expect(classifyOutcome(error, notCancelled)).toMatchObject({ ambiguous: true, summary: expect.stringMatching(/UND_ERR_SOCKET|ECONNRESET/) });
  });

  it('ambiguous: the response body timed out mid-way', async () => {
    const error = await errorOf(async () => {
      const response = await fetch(`${base}/stall-body`, { method: 'POST', body: '{}', signal: AbortSignal.timeout(300) });
      return response.json();
    });
    expect(classifyOutcome(error, notCancelled)).toMatchObject({ ambiguous: true, summary: expect.stringMatching(/TimeoutError/) });
  });

  it('ambiguous: an abort while the request was in flight', async () => {
    const controller = new AbortController();
    const error = await errorOf(async () => {
      const response = await fetch(`${base}/stall-body`, { method: 'POST', body: '{}', signal: controller.signal });
      setTimeout(() => controller.abort(), 50);
      return response.text();
    });
    expect(classifyOutcome(error, notCancelled)).toMatchObject({ ambiguous: true, summary: expect.stringMatching(/AbortError/) });
  });
});

describe('http', () => {
  it('ambiguous: "socket hang up" after the request was written', async () => {
    const error = await errorOf(
      () =>
        new Promise((resolve, reject) => {
          const req = httpRequest(`${base}/reset`, { method: 'POST' }, resolve);
          req.on('error', reject);
          req.end('{}');
        }),
    );
    expect(classifyOutcome(error, notCancelled)).toMatchObject({ ambiguous: true, summary: expect.stringMatching(/ECONNRESET/) });
  });
});

describe('what decides first', () => {
  it('the activity\'s OutcomeUnknownError, even around a connection that was refused', async () => {
    const refused = await errorOf(async () => fetch(`http://127.0.0.1:${await freePort()}/`, { method: 'POST' }));
    expect(classifyOutcome(new OutcomeUnknownError('unsure', { cause: refused }), notCancelled).ambiguous).toBe(true);
  });

  it('the activity\'s NotSentError, even while the activity is being cancelled', () => {
    expect(classifyOutcome(new NotSentError('checked before sending'), { isAmbiguous: undefined, cancelled: 'WORKER_SHUTDOWN' }).ambiguous).toBe(false);
  });

  it('an isAmbiguous match; an isAmbiguous that throws counts as ambiguous', () => {
    expect(classifyOutcome(new Error('502'), { isAmbiguous: () => true, cancelled: undefined }).ambiguous).toBe(true);
    const verdict = classifyOutcome(new Error('502'), {
      isAmbiguous: () => {
        throw new Error('classifier bug');
      },
      cancelled: undefined,
    });
    expect(verdict).toMatchObject({ ambiguous: true, summary: expect.stringMatching(/isAmbiguous threw Error while classifying/), detail: expect.stringMatching(/classifier bug/) });
  });

  it('a cancellation mid-call, for any other error', () => {
    expect(classifyOutcome(new Error('aborted'), { isAmbiguous: () => false, cancelled: 'TIMED_OUT' }).ambiguous).toBe(true);
  });

  it('otherwise definite: the activity\'s own validation error, a vendor\'s 4xx turned into an error', () => {
    expect(classifyOutcome(new TypeError('amount must be positive'), notCancelled).ambiguous).toBe(false);
    expect(classifyOutcome(new Error('Vendor answered 503: nothing was done'), notCancelled).ambiguous).toBe(false);
  });
});
