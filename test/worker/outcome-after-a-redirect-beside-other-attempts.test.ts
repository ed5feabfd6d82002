/**
 * The redirect watch subscribes when a worker's first attempt starts and unsubscribes
 * when its last one ends. A POST the vendor acted on and answered 303 while OTHER attempts (of another
 * worker, or of the same one) start and end, or on a kept-alive socket an earlier attempt opened, is
 * still the write of its attempt. Real Temporal, Postgres and sockets.
 */
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
let closedPort: number;
let heldArrived: () => void = () => undefined;
let releaseHeld: () => void = () => undefined;
const charged = (order: string) => charges.get(order) ?? 0;

beforeAll(async () => {
  closedPort = await refusedPort();
  vendor = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const { order } = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { order: string };
      charges.set(order, charged(order) + 1);
      const answer = () => {
        if (req.url?.endsWith('/ok')) return void res.writeHead(200).end('{}');
        res.writeHead(303, { location: `http://127.0.0.1:${closedPort}/receipts/ch_${order}` }).end();
      };
      if (req.url?.startsWith('/held')) {
        releaseHeld = answer;
        heldArrived();
      } else answer();
    });
  });
  await new Promise<void>((resolve) => vendor.listen(0, '127.0.0.1', resolve));
  vendorUrl = `http://127.0.0.1:${(vendor.address() as AddressInfo).port}`;
});

afterAll(async () => {
  vendor.closeAllConnections();
  await new Promise((resolve) => vendor.close(resolve));
});

async function fetchPost(path: string, order: string): Promise<unknown> {
  const response = await fetch(`${vendorUrl}${path}`, { method: 'POST', body: JSON.stringify({ order }) });
  return { status: response.status };
}

/** node:http POST on `agent`, following a 303 as follow-redirects does. */
function httpPost(agent: Agent, path: string, order: string): Promise<{ status: number }> {
  return new Promise((resolve, reject) => {
    const hop = (target: URL, method: string, payload: string | undefined) => {
      const req = httpRequest(target, { method, agent }, (res) => {
        res.resume();
        if (res.statusCode === 303 && res.headers.location) return hop(new URL(res.headers.location, target), 'GET', undefined);
        res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
      });
      req.on('error', reject);
      req.end(payload);
    };
    hop(new URL(`${vendorUrl}${path}`), 'POST', JSON.stringify({ order }));
  });
}

type Outcome = { result?: unknown; failedWith?: string };
const outcomeOf = (p: Promise<unknown>): Promise<Outcome> =>
  p.then((result) => ({ result }), (error: unknown) => ({ failedWith: (error as { cause?: { cause?: { type?: string } } }).cause?.cause?.type ?? String(error) }));

function start(taskQueue: string, args: unknown[], maximumAttempts = 3) {
  return temporal.client.workflow.start('callActivity', {
    taskQueue,
    workflowId: uniqueName('wf'),
    args: [{ activity: 'chargeCard', args, maximumAttempts }],
  });
}

const activities = { chargeCard: (path: string, order: string) => fetchPost(path, order) };

describe('a held POST answered 303 (then ECONNREFUSED) after other attempts started and ended meanwhile: charged once', () => {
  it('another worker in the process (its own watch, its own task queue) ran a whole attempt meanwhile', async () => {
    const order = uniqueName('two-workers');
    const [tqA, tqB] = [uniqueName('tq-a'), uniqueName('tq-b')];
    const arrived = new Promise<void>((resolve) => (heldArrived = resolve));
    const outcome = await temporal.withWorker({ taskQueue: tqA, activities, interceptors: { activity: idempotencyInterceptors({ store: schema.store }) } }, () =>
      temporal.withWorker({ taskQueue: tqB, activities, interceptors: { activity: idempotencyInterceptors({ store: schema.store }) } }, async () => {
        const held = await start(tqA, ['/held', order]);
        await arrived;
        for (let i = 0; i < 3; i++) await (await start(tqB, ['/ok', uniqueName('b')])).result(); // B: 0 → 1 → 0, three times
        releaseHeld();
        return outcomeOf(held.result());
      }),
    );
    expect({ charges: charged(order), outcome }).toMatchObject({ charges: 1 });
  });

  it('another attempt of the same worker started and ended meanwhile', async () => {
    const order = uniqueName('same-worker');
    const taskQueue = uniqueName('tq');
    const arrived = new Promise<void>((resolve) => (heldArrived = resolve));
    const outcome = await temporal.withWorker({ taskQueue, activities, interceptors: { activity: idempotencyInterceptors({ store: schema.store }) } }, async () => {
      const held = await start(taskQueue, ['/held', order]);
      await arrived;
      for (let i = 0; i < 3; i++) await (await start(taskQueue, ['/ok', uniqueName('b')])).result();
      releaseHeld();
      return outcomeOf(held.result());
    });
    expect({ charges: charged(order), outcome }).toMatchObject({ charges: 1 });
  });

  it('node:http on a kept-alive socket an earlier attempt opened (the watch off, then on again, in between)', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const order = uniqueName('keep-alive');
    const taskQueue = uniqueName('tq');
    const httpActivities = { chargeCard: (path: string, o: string) => httpPost(agent, path, o) };
    const outcome = await temporal.withWorker({ taskQueue, activities: httpActivities, interceptors: { activity: idempotencyInterceptors({ store: schema.store }) } }, async () => {
      await (await start(taskQueue, ['/ok', uniqueName('first')])).result(); // opens the socket; the watch goes off after
      return outcomeOf((await start(taskQueue, ['/v1/charges', order])).result());
    });
    agent.destroy();
    expect({ charges: charged(order), outcome }).toMatchObject({ charges: 1 });
  });
});
