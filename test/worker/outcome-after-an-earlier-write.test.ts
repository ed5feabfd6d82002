/**
 * Found in review: a0e351d classes any `fetch failed` as ambiguous once the attempt sent ANY write request
 * through fetch, to any host, for any purpose. Many vendor calls begin with one: an OAuth
 * client-credentials token (`POST /oauth2/token`, as PayPal, Adyen's OAuth, Salesforce, most
 * telephony APIs do per call or per expiry), a POST to a search endpoint, an audit webhook. If the
 * vendor itself is then down (its balancer refuses the connection during a deploy: `fetch failed` ←
 * `connect ECONNREFUSED`), nothing reached it; README's table ("connecting: nothing left the
 * process — definite: release, Temporal retries") and dd1ca8e ("an error raised by connect proves
 * nothing was sent") say the call is retried. Instead the token request makes it ambiguous: the
 * claim is kept `unknown` and the workflow gets the non-retryable IdempotencyOrphanedClaim ("the call
 * may already have gone out … check the vendor"). Every payment in flight during a vendor's
 * 30-second blip pages a person, who finds nothing at the vendor and has to `release` each by hand.
 *
 * "When in doubt, refuse" does not cover it: the failing request provably never connected (the
 * channel never saw its headers: `undici:client:sendHeaders` for the vendor's origin never fired).
 *
 * Real Postgres, real Temporal, Node's own fetch.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Context } from '@temporalio/activity';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idempotencyInterceptors } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { refusedPort } from '../support/refused-port.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

let charges = 0;
let server: Server;
let baseUrl: string;
/** The vendor's address while its balancer restarts: nothing listens. */
let downUrl: string;

beforeAll(async () => {
  const closedPort = await refusedPort();
  downUrl = `http://127.0.0.1:${closedPort}`;
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/oauth2/token') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"access_token":"t"}');
      charges++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"ch_1"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('an activity that POSTs for an OAuth token, then finds the vendor down (connection refused)', () => {
  it('is retried (nothing reached the vendor), not refused as orphaned', async () => {
    const activities = {
      async chargeCard(amountCents: number): Promise<unknown> {
        const token = await fetch(`${baseUrl}/oauth2/token`, { method: 'POST', body: 'grant_type=client_credentials' });
        const { access_token } = (await token.json()) as { access_token: string };
        // The vendor's balancer is restarting during the first attempt.
        const vendor = Context.current().info.attempt === 1 ? downUrl : baseUrl;
        const response = await fetch(`${vendor}/v1/charges`, {
          method: 'POST',
          headers: { authorization: `Bearer ${access_token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ amountCents }),
          redirect: 'manual',
        });
        return response.json();
      },
    };
    const taskQueue = uniqueName('tq');
    const interceptors = { activity: idempotencyInterceptors({ store: schema.store }) };
    const outcome = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      const handle = await temporal.client.workflow.start('callActivity', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'chargeCard', args: [1_500], maximumAttempts: 3 }],
      });
      return handle.result().then(
        (result) => ({ result }),
        (error: unknown) => {
          const failure = (error as { cause?: { cause?: { type?: string; message?: string } } }).cause?.cause;
          return { failedWith: failure?.type, message: failure?.message };
        },
      );
    });
    // Before a fix: { failedWith: 'IdempotencyOrphanedClaim', message: '… marked its outcome unknown (POST http://127.0.0.1:<the
    // token server> was sent before the fetch failed; …), so the call may already have gone out. Check the vendor …' }, charges 0:
    // a person is paged for a call that never connected, and the note names the token server as if it were the write.
    expect(outcome, JSON.stringify(outcome)).toEqual({ result: [{ id: 'ch_1' }] });
    expect(charges).toBe(1);
  });
});
