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

/** A system error as Node's libuv bindings raise it (`read EHOSTUNREACH`), inside undici's `fetch failed`. */
function systemError(syscall: string, code: string, errno: number): TypeError {
  const cause = Object.assign(new Error(`${syscall} ${code}`), { errno, code, syscall });
  return new TypeError('fetch failed', { cause });
}

describe('system errors, by the call that raised them', () => {
  it('ambiguous: "host unreachable" on a read or write of an open connection (a router said so after the request left)', () => {
    for (const [syscall, code, errno] of [
      ['read', 'EHOSTUNREACH', -113],
      ['write', 'ENETUNREACH', -101],
      ['writev', 'EHOSTUNREACH', -113],
    ] as const) {
      expect(classifyOutcome(systemError(syscall, code, errno), notCancelled)).toMatchObject({
        ambiguous: true,
        summary: expect.stringContaining(`${syscall} ${code}`),
      });
    }
  });

  it('ambiguous: any other error of a read or write on an open connection', () => {
    expect(classifyOutcome(systemError('read', 'ENOTCONN', -107), notCancelled).ambiguous).toBe(true);
    expect(classifyOutcome(systemError('write', 'ENETDOWN', -100), notCancelled).ambiguous).toBe(true);
  });

  it('ambiguous: a routing error that does not say it came from connect', () => {
    const bare = new TypeError('fetch failed', { cause: Object.assign(new Error('EHOSTUNREACH'), { code: 'EHOSTUNREACH' }) });
    expect(classifyOutcome(bare, notCancelled).ambiguous).toBe(true);
  });

  it('definite: the same routing errors raised by connect, before anything was sent', () => {
    expect(classifyOutcome(systemError('connect', 'EHOSTUNREACH', -113), notCancelled).ambiguous).toBe(false);
    expect(classifyOutcome(systemError('connect', 'ENETUNREACH', -101), notCancelled).ambiguous).toBe(false);
  });

  it('definite: a connect that timed out, alone or on every address of a happy-eyeballs connect (its AggregateError has no syscall)', () => {
    expect(classifyOutcome(systemError('connect', 'ETIMEDOUT', -110), notCancelled).ambiguous).toBe(false);
    const members = [
      Object.assign(new Error('connect ETIMEDOUT 2001:db8::1:443'), { code: 'ETIMEDOUT', syscall: 'connect' }),
      Object.assign(new Error('connect EHOSTUNREACH 192.0.2.1:443'), { code: 'EHOSTUNREACH', syscall: 'connect' }),
    ];
    const aggregate = Object.assign(new AggregateError(members), { code: 'ETIMEDOUT' });
    expect(classifyOutcome(new TypeError('fetch failed', { cause: aggregate }), notCancelled).ambiguous).toBe(false);
  });

  it('ambiguous: an aggregate with one member that failed after connecting', () => {
    const members = [
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:443'), { code: 'ECONNREFUSED', syscall: 'connect' }),
      Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', syscall: 'read' }),
    ];
    expect(classifyOutcome(Object.assign(new AggregateError(members), { code: 'ECONNREFUSED' }), notCancelled).ambiguous).toBe(true);
  });

  it('ambiguous: answers that could not be parsed or decoded (the request had left); definite: undici refusing a bad argument', () => {
    for (const code of ['HPE_HEADER_OVERFLOW', 'HPE_INVALID_CONSTANT', 'UND_ERR_HEADERS_OVERFLOW', 'Z_DATA_ERROR', 'ERR_HTTP2_STREAM_ERROR']) {
      const error = new TypeError('terminated', { cause: Object.assign(new Error(code), { code }) });
      expect(classifyOutcome(error, notCancelled), code).toMatchObject({ ambiguous: true, summary: expect.stringContaining(code) });
    }
    const badArgument = Object.assign(new Error('invalid method'), { code: 'UND_ERR_INVALID_ARG' });
    expect(classifyOutcome(badArgument, notCancelled).ambiguous).toBe(false);
  });

  it('definite: a file the activity could not open before sending (not a socket)', () => {
    const missing = Object.assign(new Error("ENOENT: no such file or directory, open 'template.json'"), { errno: -2, code: 'ENOENT', syscall: 'open' });
    expect(classifyOutcome(missing, notCancelled).ambiguous).toBe(false);
  });
});

describe('a write request the vendor answered with a redirect', () => {
  const redirected = { isAmbiguous: undefined, cancelled: undefined, redirectedWrite: 'POST http://127.0.0.1:8443 → 303' };

  it('makes a later failure ambiguous, even one that reads as "never connected" (the next hop could not connect)', async () => {
    const refused = await errorOf(async () => fetch(`http://127.0.0.1:${await freePort()}/receipts/1`));
    expect(classifyOutcome(refused, notCancelled).ambiguous).toBe(false);
    expect(classifyOutcome(refused, redirected)).toMatchObject({
      ambiguous: true,
      summary: expect.stringContaining('the vendor had answered POST http://127.0.0.1:8443 → 303'),
    });
    expect(classifyOutcome(new TypeError('fetch failed', { cause: new Error('redirect count exceeded') }), redirected).ambiguous).toBe(true);
  });

  it("still yields to the activity's own word: NotSentError decides first", () => {
    expect(classifyOutcome(new NotSentError('checked before sending'), redirected).ambiguous).toBe(false);
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
