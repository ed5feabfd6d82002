/**
 * IdempotentActivityEnvironment: a user's activity, unit-tested under the
 * interceptor on the in-memory store, as the README shows it. No worker,
 * no Temporal server, no Postgres.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import {
  IdempotencyClaimBusy,
  IdempotencyContextError,
  IdempotencyOrphanedClaim,
  InvalidArgumentError,
  OutcomeUnknownError,
  idempotencyHeaders,
  idempotencyKey,
  keyToUuid,
} from '../../src/index.js';
import { DefaultLogger } from '@temporalio/worker';
import { IdempotentActivityEnvironment, InMemoryClaimStore, ManualClock } from '../../src/testing/index.js';
import type { IdempotentActivityEnvironmentOptions } from '../../src/testing/index.js';

interface Order {
  readonly orderId: string;
  readonly amountCents: number;
}

/** A vendor that records what it was sent, as a user's fake would. */
function fakeVendor() {
  const requests: Array<{ idempotencyKey: string; order: Order }> = [];
  return {
    requests,
    async chargeCard(order: Order): Promise<{ chargeId: string }> {
      requests.push({ idempotencyKey: idempotencyHeaders()['Idempotency-Key'], order });
      return { chargeId: `ch_${requests.length}` };
    },
  };
}

/** The SDK logs every failed attempt as a warning; these tests fail attempts on purpose. */
function quietEnvironment<A extends object>(options: IdempotentActivityEnvironmentOptions<A> = {}): IdempotentActivityEnvironment<A> {
  return new IdempotentActivityEnvironment<A>({ ...options, mockOptions: { logger: new DefaultLogger('ERROR') } });
}

async function failureOf(attempt: Promise<unknown>): Promise<ApplicationFailure> {
  const error = await attempt.then(() => undefined, (failure: unknown) => failure);
  if (!(error instanceof ApplicationFailure)) throw new Error(`expected an ApplicationFailure, got ${String(error)}`);
  return error;
}

describe('IdempotentActivityEnvironment', () => {
  it('gives the activity the key it claimed, and answers a repeat from the record without calling the vendor', async () => {
    const store = new InMemoryClaimStore();
    const env = quietEnvironment({ store });
    const vendor = fakeVendor();
    const chargeCard = vendor.chargeCard;
    const order = { orderId: 'o-1', amountCents: 4200 };

    const first = await env.run(chargeCard, order);
    const repeat = await env.attempt({ activityType: 'chargeCard', attempt: 2 }).run(chargeCard, order);

    expect(repeat).toEqual(first);
    const [claim, ...others] = await store.claims();
    expect(others).toEqual([]);
    expect(claim).toMatchObject({ state: 'completed', activityType: 'chargeCard', attempt: 1 });
    expect(vendor.requests).toEqual([{ idempotencyKey: claim!.key, order }]);
  });

  it('keys another action (other arguments, another workflow) apart, and the same action the same', async () => {
    const keys: string[] = [];
    async function sendSms(to: string): Promise<string> {
      keys.push(idempotencyKey({ format: 'uuid' }));
      return `sent to ${to}`;
    }
    const env = quietEnvironment({ info: { workflowExecution: { workflowId: 'order-1', runId: 'run-1' } } });
    await env.run(sendSms, '+15550001');
    await env.run(sendSms, '+15550002');
    await env.attempt({ activityType: 'sendSms', workflowExecution: { workflowId: 'order-2', runId: 'run-1' } }).run(sendSms, '+15550001');
    await env.attempt({ activityType: 'sendSms', workflowExecution: { workflowId: 'order-1', runId: 'run-2' } }).run(sendSms, '+15550001');
    // The last is the first again: the default scope keys on the workflow id, which a new run keeps.
    expect(keys).toHaveLength(3);
    expect(new Set(keys).size).toBe(3);
  });

  it('keeps an ambiguous failure unknown, and refuses the next attempt instead of calling again', async () => {
    const env = quietEnvironment();
    let calls = 0;
    async function placeCall(to: string): Promise<string> {
      calls++;
      throw new OutcomeUnknownError(`the line to ${to} dropped after dialling`);
    }
    await expect(env.run(placeCall, '+15550001')).rejects.toThrow(ApplicationFailure);
    const refusal = await failureOf(env.attempt({ activityType: 'placeCall', attempt: 2 }).run(placeCall, '+15550001'));
    expect(refusal.type).toBe(IdempotencyOrphanedClaim);
    expect(refusal.nonRetryable).toBe(true);
    expect(calls).toBe(1);
  });

  it('makes a running owner look dead by moving the clock, not by sleeping: busy while alive, refused once its lease lapsed', async () => {
    const clock = new ManualClock();
    const store = new InMemoryClaimStore({ clock });
    const env = quietEnvironment({ store, leaseMs: 10_000 });
    let finish: (value: string) => void = () => undefined;
    let calls = 0;
    async function transfer(_amount: number): Promise<string> {
      calls++;
      return new Promise<string>((resolve) => (finish = resolve));
    }
    const running = env.run(transfer, 100);
    await expect.poll(() => calls).toBe(1);

    const busy = await failureOf(env.attempt({ activityType: 'transfer', attempt: 2 }).run(transfer, 100));
    expect(busy.type).toBe(IdempotencyClaimBusy);
    expect(busy.nonRetryable).toBe(false);

    clock.advance(10_000);
    const orphaned = await failureOf(env.attempt({ activityType: 'transfer', attempt: 3 }).run(transfer, 100));
    expect(orphaned.type).toBe(IdempotencyOrphanedClaim);
    expect(calls).toBe(1);

    finish('done');
    await expect(running).resolves.toBe('done');
  });

  it('lets a vendorDedup activity run again with the same key after its owner died', async () => {
    const clock = new ManualClock();
    const store = new InMemoryClaimStore({ clock });
    const env = quietEnvironment({ store, activities: { chargeCard: { vendorDedup: true } } });
    const keys: string[] = [];
    let finishFirst: () => void = () => undefined;
    async function chargeCard(orderId: string): Promise<string> {
      keys.push(idempotencyKey());
      if (keys.length === 1) await new Promise<void>((resolve) => (finishFirst = resolve));
      return `charged ${orderId}`;
    }
    const first = env.run(chargeCard, 'o-1');
    await expect.poll(() => keys.length).toBe(1);
    clock.advance(30_000);
    await expect(env.attempt({ activityType: 'chargeCard', attempt: 2 }).run(chargeCard, 'o-1')).resolves.toBe('charged o-1');
    expect(keys).toEqual([keys[0], keys[0]]);
    expect(keyToUuid(keys[0]!)).toMatch(/^[0-9a-f-]{36}$/);
    finishFirst();
    await first;
  });

  it('keeps the calls that went out in the in-memory ledger with audit: true, and not the repeats', async () => {
    const store = new InMemoryClaimStore();
    const env = quietEnvironment({ store, audit: true });
    const vendor = fakeVendor();
    const chargeCard = vendor.chargeCard;
    await env.run(chargeCard, { orderId: 'o-1', amountCents: 1 });
    await env.run(chargeCard, { orderId: 'o-1', amountCents: 1 });
    const calls = store.auditLedger().calls();
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ activityType: 'chargeCard', outcome: 'completed', key: vendor.requests[0]!.idempotencyKey });
  });

  it('leaves an activity set to false unguarded: it runs every time and has no key', async () => {
    let polls = 0;
    async function getPaymentStatus(): Promise<string> {
      polls++;
      return idempotencyKey();
    }
    const env = quietEnvironment({ activities: { getPaymentStatus: false } });
    await expect(env.run(getPaymentStatus)).rejects.toThrow(IdempotencyContextError);
    await expect(env.run(getPaymentStatus)).rejects.toThrow(/leave unguarded/);
    expect(polls).toBe(2);
  });

  it('names what it needs when an activity has no name to go by', async () => {
    const env = quietEnvironment();
    const anonymous = [async () => 'x'][0]!;
    expect(() => env.run(anonymous)).toThrow(InvalidArgumentError);
    expect(() => env.run(anonymous)).toThrow(/has no name to register it by; run it with attempt\(\{ activityType/);
    expect(() => env.attempt({} as { activityType: string })).toThrow(/needs the activity type/);
    await expect(env.attempt({ activityType: 'named' }).run(anonymous)).resolves.toBe('x');
  });

  it('is a MockActivityEnvironment per attempt: heartbeats reach it, and a cancel mid-call keeps the outcome unknown', async () => {
    const store = new InMemoryClaimStore();
    const env = quietEnvironment({ store });
    async function dial(to: string): Promise<string> {
      Context.current().heartbeat({ dialling: to });
      await Context.current().cancelled;
      return 'unreachable';
    }
    const attempt = env.attempt({ activityType: 'dial' });
    expect(attempt).toBeInstanceOf(MockActivityEnvironment);
    const heartbeats: unknown[] = [];
    attempt.on('heartbeat', (details: unknown) => heartbeats.push(details));
    const call = attempt.run(dial, '+15550001');
    await expect.poll(() => heartbeats).toEqual([{ dialling: '+15550001' }]);
    attempt.cancel();
    expect((await failureOf(call)).type).toBe(IdempotencyOrphanedClaim);
    expect((await store.claims())[0]).toMatchObject({ state: 'unknown', activityType: 'dial' });
  });
});
