/**
 * A worker made after an earlier one was dropped still hears its attempts' redirects. Found in review:
 * while each watch held its own diagnostics-channel objects, a dropped worker's were collected, and a
 * watch made before Node forgot them (by name) got channel objects undici never publishes on, so a POST
 * answered 303, then ECONNREFUSED, was "not sent" and charged twice. The process holds the channels now.
 *
 * No services: the public testing environment (one `idempotencyInterceptors()` each, as a worker).
 */
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { IdempotentActivityEnvironment } from '../../src/testing/index.js';
import { refusedPort } from '../support/refused-port.js';

setFlagsFromString('--expose_gc');
const gc = runInNewContext('gc') as () => void;

let charges = 0;
let vendor: Server;
let vendorUrl: string;
let closedPort: number;

beforeAll(async () => {
  closedPort = await refusedPort();
  vendor = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      charges++; // the charge is made; the receipt is on a host that is down
      res.writeHead(303, { location: `http://127.0.0.1:${closedPort}/receipts/1` }).end();
    });
  });
  await new Promise<void>((resolve) => vendor.listen(0, '127.0.0.1', resolve));
  vendorUrl = `http://127.0.0.1:${(vendor.address() as AddressInfo).port}`;
});

afterAll(async () => {
  vendor.closeAllConnections();
  await new Promise((resolve) => vendor.close(resolve));
});

it('a worker made just after an earlier one was collected, before the first fetch: a POST answered 303, then ECONNREFUSED, charges once', async () => {
  // Nothing in this process has called fetch yet (undici is loaded by the first call).
  expect((process as unknown as { moduleLoadList: string[] }).moduleLoadList.some((m) => m.includes('undici'))).toBe(false);
  (() => new IdempotentActivityEnvironment())(); // an earlier worker, gone (a restart, or a test's own environment)
  await new Promise((resolve) => setTimeout(resolve, 10));
  gc(); // its channel objects are collected; Node's FinalizationRegistry clean-up runs on a later task
  const env = new IdempotentActivityEnvironment(); // the next worker, made in that window
  await new Promise((resolve) => setTimeout(resolve, 50)); // it waits for its first task (the clean-up runs meanwhile)

  async function chargeCard(order: string): Promise<number> {
    const response = await fetch(`${vendorUrl}/v1/charges`, { method: 'POST', body: JSON.stringify({ order }) });
    return response.status;
  }
  const first = await env.run(chargeCard, 'order-1').catch((error: unknown) => error);
  const second = await env.run(chargeCard, 'order-1').catch((error: unknown) => error);
  // Expected: attempt 1 kept unknown ("the vendor had answered POST … → 303"), attempt 2 refused.
  expect({ charges, first: String(first), second: String(second) }).toMatchObject({ charges: 1 });
});
