/**
 * What decides the key, what makes a call unkeyable, which activities are
 * guarded at all, and every configuration mistake: caught when the worker is
 * configured, or, where only the running activity shows it, refused before
 * the activity runs. Through MockActivityEnvironment on the in-memory store.
 * No services.
 */
import { ApplicationFailure, defaultPayloadConverter } from '@temporalio/common';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import {
  IdempotencyConfigError,
  IdempotencyConfiguration,
  IdempotencyContextError,
  IdempotencyInvalidKeyInput,
  auditLedgerInterceptors,
  idempotencyInterceptors,
  idempotencyKey,
} from '../../src/index.js';
import type { IdempotencyOptions } from '../../src/index.js';
import { InMemoryClaimStore } from '../../src/testing/index.js';
import { Attempts, errorOf, failureOf } from '../support/unit-attempts.js';

describe('invalid key input: refused non-retryably before anything runs', () => {
  const cycle: Record<string, unknown> = {};
  cycle['self'] = cycle;
  it.each<[string, unknown[], IdempotencyOptions['activities'], string]>([
    ['a function in the arguments', [{ to: '+1555', onSent: () => undefined }], undefined, 'args[0].onSent'],
    ['a number that is not finite', [{ amount: Number.NaN }], undefined, 'args[0].amount'],
    ['a BigInt', [{ amount: 10n }], undefined, 'args[0].amount'],
    ['a cycle', [cycle], undefined, 'args[0].self'],
    ['keyArgs returning undefined (a missing return)', ['o-1'], { chargeCard: { keyArgs: () => undefined } }, 'keyArgs()'],
    ['a keyArgs that throws', ['o-1'], { chargeCard: { keyArgs: () => JSON.parse('{') as unknown } }, 'keyArgs()'],
    ['a custom key that is empty', ['o-1'], { chargeCard: { key: () => '' } }, 'key()'],
    ['a custom key that is not a string', ['o-1'], { chargeCard: { key: () => 42 as unknown as string } }, 'key()'],
  ])('%s: IdempotencyInvalidKeyInput naming the path; nothing claimed', async (_, args, activities, path) => {
    const attempts = new Attempts({ activities });
    let calls = 0;
    const chargeCard = async (..._args: unknown[]) => `charged (${++calls})`;

    const refusal = await failureOf(() => attempts.attempt('chargeCard', 1).run(chargeCard, ...args));

    expect(refusal.type).toBe(IdempotencyInvalidKeyInput);
    expect(refusal.nonRetryable).toBe(true);
    expect(refusal.message).toContain(`Refusing to run chargeCard: `);
    expect(refusal.details?.[0]).toMatchObject({ activityType: 'chargeCard', path });
    expect(calls).toBe(0);
    expect(await attempts.store.claims()).toEqual([]);
  });

  it('names only the class of an error a key function threw: its message may carry argument values', async () => {
    const attempts = new Attempts({
      activities: {
        chargeCard: {
          key: ({ args }) => {
            throw new Error(`no order for card ${String(args[0])}`);
          },
        },
      },
    });
    const refusal = await failureOf(() => attempts.attempt('chargeCard', 1).run(async (_card: string) => 'x', '4111111111111111'));
    expect(refusal.message).toMatch(/it threw Error/);
    expect(JSON.stringify([refusal.message, refusal.details])).not.toContain('4111111111111111');
  });
});

describe('what makes two calls one action', () => {
  async function keysOf(options: IdempotencyOptions['activities'], calls: Array<[{ workflowId?: string; runId?: string; activityId?: string }, unknown[]]>) {
    const attempts = new Attempts({ activities: options });
    const keys: string[] = [];
    const chargeCard = async (..._args: unknown[]) => void keys.push(idempotencyKey());
    for (const [{ workflowId = 'order-42', runId = 'run-1', activityId = '1' }, args] of calls) {
      await attempts.attempt('chargeCard', 1, { workflowExecution: { workflowId, runId }, activityId }).run(chargeCard, ...args);
    }
    return { keys, claims: await attempts.store.claims() };
  }

  it('workflow scope (the default): a new run of the workflow is the same action; another workflow is another', async () => {
    const { keys, claims } = await keysOf(undefined, [[{}, ['o-1']], [{ runId: 'run-2' }, ['o-1']], [{ workflowId: 'order-43' }, ['o-1']]]);
    expect(keys).toHaveLength(2);
    expect(claims).toHaveLength(2);
  });

  it('run scope: a new run (a reset) is another action', async () => {
    const { keys } = await keysOf({ chargeCard: { scope: 'run' } }, [[{}, ['o-1']], [{ runId: 'run-2' }, ['o-1']], [{ activityId: '7' }, ['o-1']]]);
    expect(keys).toHaveLength(2);
  });

  it('call scope: another activity id is another action', async () => {
    const { keys } = await keysOf({ chargeCard: { scope: 'call' } }, [[{}, ['o-1']], [{ activityId: '7' }, ['o-1']], [{}, ['o-1']]]);
    expect(keys).toHaveLength(2);
  });

  it('keyArgs: only the part of the arguments it picks defines the action', async () => {
    const keyArgs = (args: readonly unknown[]) => (args[0] as { orderId: string }).orderId;
    const { keys } = await keysOf({ chargeCard: { keyArgs } }, [[{}, [{ orderId: 'o-1', traceId: 't-1' }]], [{}, [{ orderId: 'o-1', traceId: 't-2' }]]]);
    expect(keys).toHaveLength(1);
  });

  it('a custom key: the same action whichever workflow calls it', async () => {
    const key = ({ args }: { args: readonly unknown[] }) => `charge:${String(args[0])}`;
    const { keys } = await keysOf({ chargeCard: { key } }, [[{}, ['o-1']], [{ workflowId: 'order-43' }, ['o-1']]]);
    expect(keys).toHaveLength(1);
  });
});

describe('the arguments kept with the claim, for the operator who checks the vendor', () => {
  const decoded = (payload: Payload | null) => (payload === null ? null : defaultPayloadConverter.fromPayload(payload));

  it('are the canonical text of the semantic arguments by default, and absent with recordArguments: false', async () => {
    const attempts = new Attempts({ activities: { sendSms: { recordArguments: false } } });
    await attempts.attempt('chargeCard', 1).run(async (_order: object) => 'ch_1', { orderId: 'o-1', amountCents: 5 });
    await attempts.attempt('sendSms', 1).run(async (_to: string) => 'sent', '+15550001');
    const [charged, sent] = await attempts.store.claims();
    expect(decoded(await attempts.store.recordedArguments(charged!.key))).toBe('[{"amountCents":5,"orderId":"o-1"}]');
    expect(await attempts.store.recordedArguments(sent!.key)).toBeNull();
  });

  it('are left out, and the call still made, when the codec cannot encode them', async () => {
    let encoded = 0;
    const failsOnArguments: PayloadCodec = {
      encode: async (payloads) => {
        if (encoded++ === 0) throw new Error('key service unavailable');
        return payloads;
      },
      decode: async (payloads) => payloads,
    };
    const attempts = new Attempts({ payloadCodecs: [failsOnArguments] });
    await expect(attempts.attempt('chargeCard', 1).run(async (_orderId: string) => 'ch_1', 'o-1')).resolves.toBe('ch_1');
    const claim = await attempts.store.onlyClaim();
    expect(claim.state).toBe('completed');
    expect(await attempts.store.recordedArguments(claim.key)).toBeNull();
    expect(attempts.logged('WARN', /the arguments could not be encoded; the claim is made without them/)).toHaveLength(1);
  });
});

describe('activities that are not writes', () => {
  it('an activity set to false runs on every attempt, unclaimed, unrecorded, and has no key', async () => {
    const attempts = new Attempts({ audit: true, activities: { getPaymentStatus: false } });
    let polls = 0;
    const getPaymentStatus = async (_paymentId: string) => `status ${++polls}`;
    await expect(attempts.attempt('getPaymentStatus', 1).run(getPaymentStatus, 'p-1')).resolves.toBe('status 1');
    await expect(attempts.attempt('getPaymentStatus', 2).run(getPaymentStatus, 'p-1')).resolves.toBe('status 2');
    const keyless = await errorOf(() => attempts.attempt('getPaymentStatus', 3).run(async () => idempotencyKey()));
    expect(keyless).toBeInstanceOf(IdempotencyContextError);
    expect(String(keyless)).toMatch(/which its settings leave unguarded/);
    expect(await attempts.store.claims()).toEqual([]);
    expect(attempts.store.auditLedger().entries()).toEqual([]);
  });

  it("with guard: 'listed', guards only the activities listed (not as false); the rest run every time", async () => {
    const attempts = new Attempts({ guard: 'listed', activities: { chargeCard: {}, getPaymentStatus: false } });
    let charges = 0;
    let polls = 0;
    const chargeCard = async (_orderId: string) => `ch_${++charges}`;
    const getPaymentStatus = async (_paymentId: string) => `status ${++polls}`;
    const lookUpCustomer = async (_customerId: string) => `customer ${++polls}`;
    for (const attempt of [1, 2]) {
      await attempts.attempt('chargeCard', attempt).run(chargeCard, 'o-1');
      await attempts.attempt('getPaymentStatus', attempt).run(getPaymentStatus, 'p-1');
      await attempts.attempt('lookUpCustomer', attempt).run(lookUpCustomer, 'c-1');
    }
    expect(charges).toBe(1);
    expect(polls).toBe(4);
    expect((await attempts.store.claims()).map((claim) => claim.activityType)).toEqual(['chargeCard']);
  });
});

describe('configuration mistakes, caught when the worker is configured', () => {
  const store = new InMemoryClaimStore();
  it.each<[string, unknown, RegExp]>([
    ['no options', undefined, /Invalid idempotency option options: pass an object/],
    ['no store', {}, /option store: a ClaimStore is required/],
    // Found in review: a store without keySalt was accepted, and every call then failed retryably, for ever.
    ['a store without begin', { store: { ...storeMethodsOf(store), begin: undefined } }, /option store: the ClaimStore given has no begin: every store must/],
    ['a store without keySalt', { store: { ...storeMethodsOf(store), keySalt: undefined } }, /option store: the ClaimStore given has no keySalt: every store must/],
    // Without them a refused workflow would never hear of the outcome, nor a lost record be told from a lost claim.
    [
      'a store without the waiter and settling reads',
      { store: { ...storeMethodsOf(store), waitersToTell: undefined, waitersTold: undefined, get: undefined, handBack: undefined } },
      /option store: the ClaimStore given has no get, handBack, waitersToTell, waitersTold: every store must/,
    ],
    ['an unknown scope', { store, scope: 'global' }, /option scope: "global" is not a scope; use one of workflow, run, call/],
    ['an unknown per-activity setting', { store, activities: { chargeCard: { scopes: 'run' } } }, /option activities\.chargeCard\.scopes: unknown setting/],
    ['per-activity settings that are not an object', { store, activities: { chargeCard: true } }, /option activities\.chargeCard: expected an object/],
    ['a keyArgs that is not a function', { store, activities: { chargeCard: { keyArgs: 'orderId' } } }, /activities\.chargeCard\.keyArgs: expected a function/],
    ['a reconcile that is not a function', { store, activities: { chargeCard: { reconcile: {} } } }, /activities\.chargeCard\.reconcile: expected a function/],
    ['a vendorDedup that is not a boolean', { store, activities: { chargeCard: { vendorDedup: 'yes' } } }, /activities\.chargeCard\.vendorDedup: expected true or false/],
    ['a negative recordRetryMs', { store, recordRetryMs: -1 }, /option recordRetryMs: expected a duration in milliseconds/],
    ['a maxWaitMs that is not a number', { store, maxWaitMs: '60s' }, /option maxWaitMs: expected a duration/],
    ['a lease too short to renew', { store, leaseMs: 500 }, /option leaseMs: 500 ms is too short to renew reliably/],
    ['an unknown guard', { store, guard: 'some' }, /option guard: "some" is not 'all' or 'listed'/],
    ['an empty workerIdentity', { store, workerIdentity: ' ' }, /option workerIdentity: expected a non-empty string/],
    ['an audit that is not a ledger', { store, audit: 'yes' }, /option audit: expected true, false, or an AuditLedger/],
    ['audit: true on a store that keeps no ledger', { store: { ...storeMethodsOf(store), auditLedger: undefined }, audit: true }, /option audit: this store keeps no ledger/],
  ])('%s: IdempotencyConfigError naming the option', (_, options, message) => {
    const configure = () => idempotencyInterceptors(options as IdempotencyOptions);
    expect(configure).toThrow(IdempotencyConfigError);
    expect(configure).toThrow(message);
  });
});

describe('configuration mistakes only the running activity shows: refused non-retryably before it runs', () => {
  it("'call' scope on a local activity, whose retries after a long backoff get new activity ids", async () => {
    const attempts = new Attempts({ activities: { reserveSeat: { scope: 'call' } } });
    let calls = 0;
    const refusal = await failureOf(() => attempts.attempt('reserveSeat', 1, { isLocal: true }).run(async () => ++calls));
    expect(refusal.type).toBe(IdempotencyConfiguration);
    expect(refusal.nonRetryable).toBe(true);
    expect(refusal.message).toMatch(/'call' scope cannot key the local activity reserveSeat/);
    expect(calls).toBe(0);
    await expect(attempts.attempt('reserveSeat', 1).run(async () => ++calls)).resolves.toBe(1);
  });

  it("with guard: 'listed', an activity one letter away from a listed name (a misspelling would leave it unguarded)", async () => {
    const attempts = new Attempts({ guard: 'listed', activities: { chargeCard: {} } });
    let calls = 0;
    const refusal = await failureOf(() => attempts.attempt('chargeCards', 1).run(async () => ++calls));
    expect(refusal.type).toBe(IdempotencyConfiguration);
    expect(refusal.nonRetryable).toBe(true);
    expect(refusal.message).toMatch(/activity chargeCards is not listed, but chargeCard is, and guard is 'listed'/);
    expect(calls).toBe(0);
  });

  it('the interceptors registered twice: the inner copy would wait on the outer copy\'s claim', async () => {
    const store = new InMemoryClaimStore();
    const twice = [...idempotencyInterceptors({ store }), ...idempotencyInterceptors({ store })];
    const refusal = await failureOf(async () => new MockActivityEnvironment({ activityType: 'chargeCard' }, { interceptors: twice, logger: new DefaultLogger('ERROR') }));
    expect(refusal.type).toBe(IdempotencyConfiguration);
    expect(refusal.nonRetryable).toBe(true);
    expect(refusal.message).toMatch(/registered twice on this worker/);
  });

  it('the audit ledger outside the idempotency interceptor: it would record calls a replay never makes', async () => {
    const store = new InMemoryClaimStore();
    const outsideIn = [...auditLedgerInterceptors({ ledger: store.auditLedger() }), ...idempotencyInterceptors({ store })];
    const environment = new MockActivityEnvironment({ activityType: 'chargeCard' }, { interceptors: outsideIn, logger: new DefaultLogger('ERROR') });
    let calls = 0;
    const refusal = await failureOf(() => environment.run(async () => ++calls));
    expect(refusal).toBeInstanceOf(ApplicationFailure);
    expect(refusal.type).toBe(IdempotencyConfiguration);
    expect(refusal.nonRetryable).toBe(true);
    expect(refusal.message).toMatch(/the audit ledger interceptor runs outside \(or without\) the idempotency interceptor/);
    expect(calls).toBe(0);
    expect(store.auditLedger().entries()).toEqual([]);
  });

  it('warns once, naming the near miss, when a misspelled name leaves an activity on the worker\'s defaults', async () => {
    const attempts = new Attempts({ activities: { sendSMS: { vendorDedup: true } } });
    await attempts.attempt('sendSms', 1).run(async (_to: string) => 'sent', '+1');
    await attempts.attempt('sendSms', 1).run(async (_to: string) => 'sent', '+2');
    expect(attempts.logged('WARN', /activity sendSms has no settings, but activities\.sendSMS names no activity that ran here/)).toHaveLength(1);
  });
});

/** A store's methods as an object literal (what a hand-written store is), bound to `store`. */
function storeMethodsOf(store: object): Record<string, unknown> {
  const methods: Record<string, unknown> = {};
  for (let prototype = Object.getPrototypeOf(store); prototype && prototype !== Object.prototype; prototype = Object.getPrototypeOf(prototype)) {
    for (const name of Object.getOwnPropertyNames(prototype)) {
      const value = (store as Record<string, unknown>)[name];
      if (name !== 'constructor' && typeof value === 'function' && !(name in methods)) methods[name] = value.bind(store);
    }
  }
  return methods;
}
