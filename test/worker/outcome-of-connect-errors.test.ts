/**
 * Found in review: a regression of 62b158a ("EHOSTUNREACH/ENETUNREACH prove nothing was sent only from
 * connect"). Node's happy-eyeballs connect (autoSelectFamily, the default since Node 20) to a host with
 * several addresses (A + AAAA records), all unreachable, fails with an AggregateError whose own
 * `code` is EHOSTUNREACH (or ENETUNREACH) and which has no `syscall`: only its members say
 * `connect`. transportVerdict reads "EHOSTUNREACH, syscall not connect" as in flight and returns at
 * once, before it ever reaches the members, so a call that never left the process is kept `unknown`
 * and refused non-retryably (IdempotencyOrphanedClaim): a person is paged, the workflow waits, for a
 * charge that was never attempted. Before 62b158a it was definite and Temporal retried it.
 *
 * (With Node's default 250 ms attempt timeout the same outage gives AggregateError ETIMEDOUT whose
 * members are `connect ETIMEDOUT`/`connect EHOSTUNREACH`: also refused, and for the same reason, the
 * aggregate's own code read without its members; older than today's change.)
 *
 * Real Postgres, real Temporal, real sockets: 2001:db8::/32 must be answered with ICMP unreachable
 * by this network, which the test checks as a precondition.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Context } from '@temporalio/activity';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idempotencyInterceptors } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

const charges = new Map<string, number>();
let vendor: Server;
let vendorUrl: string;

function charged(order: string): number {
  return charges.get(order) ?? 0;
}

beforeAll(async () => {
  vendor = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const { order } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { order: string };
      charges.set(order, charged(order) + 1);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: `ch_${order}`, status: 'succeeded' }));
    });
  });
  await new Promise<void>((resolve) => vendor.listen(0, '127.0.0.1', resolve));
  vendorUrl = `http://127.0.0.1:${(vendor.address() as AddressInfo).port}`;
});

afterAll(async () => {
  vendor.closeAllConnections();
  await new Promise((resolve) => vendor.close(resolve));
});

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

describe('a connect that failed on every address of a dual-stack host: nothing left the process', () => {
  it('happy-eyeballs AggregateError EHOSTUNREACH (members: connect) is retried, not refused as orphaned', async () => {
    const order = uniqueName('unreachable');
    const port = Number(new URL(vendorUrl).port);
    let firstError: { name?: string; code?: string; syscall?: string; members?: string[] } | undefined;
    const outcome = await run(async (o) => {
      // The first attempt finds both of the vendor's addresses unreachable (a routing outage); the retry gets through.
      const unreachable = Context.current().info.attempt === 1;
      const addresses = unreachable
        ? [{ address: '2001:db8::1', family: 6 }, { address: '2001:db8::2', family: 6 }]
        : [{ address: '127.0.0.1', family: 4 }];
      const lookup = (_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) =>
        options?.all ? callback(null, addresses) : callback(null, addresses[0]!.address, addresses[0]!.family);
      return new Promise((resolve, reject) => {
        const req = httpRequest(
          { host: 'api.vendor.test', port, path: '/v1/charges', method: 'POST', lookup, autoSelectFamily: true, autoSelectFamilyAttemptTimeout: 5_000 } as never,
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (chunk: Buffer) => chunks.push(chunk));
            res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
          },
        );
        req.on('error', (error: Error & { code?: string; errors?: Array<{ code?: string; syscall?: string }> }) => {
          if (unreachable) {
            firstError = { name: error.name, code: error.code, syscall: (error as { syscall?: string }).syscall, members: error.errors?.map((e) => `${e.syscall} ${e.code}`) };
          }
          reject(error);
        });
        req.end(JSON.stringify({ order: o }));
      });
    }, order);
    // Precondition: every connect to 2001:db8::/32 failed (unreachable here; a network that drops instead times the connects out).
    expect(firstError).toMatchObject({ name: 'AggregateError', code: expect.stringMatching(/^E(HOST|NET)UNREACH|ETIMEDOUT$/), syscall: undefined });
    expect(firstError!.members!.every((member) => member.startsWith('connect '))).toBe(true);
    // Before a fix: { failedWith: 'IdempotencyOrphanedClaim' } (non-retryable), though nothing left the process.
    expect(outcome).toEqual({ result: [{ id: `ch_${order}`, status: 'succeeded' }] });
    expect(charged(order)).toBe(1);
  });
});
