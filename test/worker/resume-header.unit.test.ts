/**
 * How the worker reads the headers `resumable()` puts on its calls. After an operator's decision,
 * only a call of the refused type, in the refused call's place, looks the refused key up; any other
 * call is keyed as its own, and refused under `call` scope, whose key would be new. On every pass, a
 * `call`-scoped write beside other writes in one closure is refused before it runs.
 */
import type { Info } from '@temporalio/activity';
import { defaultPayloadConverter } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { RESUMABLE_EARLIER_HEADER, RESUME_KEY_HEADER } from '../../src/call-headers.js';
import type { ResumeKey } from '../../src/call-headers.js';
import { InvalidKeyInputError, KeySalt } from '../../src/key/index.js';
import { callIdentityFor, checkCallScopeAlone } from '../../src/worker/call-identity.js';
import { IdempotencyConfigError } from '../../src/errors.js';
import type { ResolvedActivitySettings } from '../../src/worker/options.js';

const REFUSED_KEY = 'a'.repeat(64);

const settings: ResolvedActivitySettings = {
  guarded: true,
  scope: 'workflow',
  keyArgs: undefined,
  key: undefined,
  isAmbiguous: undefined,
  vendorDedup: false,
  reconcile: undefined,
  recordArguments: false,
};

function info(activityType: string, activityId = '7'): Info {
  return {
    activityType,
    activityId,
    namespace: 'default',
    attempt: 1,
    isLocal: false,
    startToCloseTimeoutMs: 30_000,
    workflowExecution: { workflowId: 'wf-1', runId: 'run-1' },
  } as Info;
}

function identity(activityType: string, resume: ResumeKey, overrides: Partial<ResolvedActivitySettings> = {}) {
  const headers = { [RESUME_KEY_HEADER]: defaultPayloadConverter.toPayload(resume) };
  return callIdentityFor(info(activityType), [{ order: 'A' }], headers, { ...settings, ...overrides }, 'worker-1', new KeySalt(Buffer.from('ab'.repeat(32), 'hex')));
}

describe('the resume header on a call of a pass after a decision', () => {
  it('in the refused call\'s place: the refused key is looked up first, then the call\'s own', () => {
    const { request, resumed } = identity('charge', { key: REFUSED_KEY, activityType: 'charge', match: 'same' });
    expect(resumed).toBe('same');
    expect(request.refusedKey).toBe(REFUSED_KEY);
    expect(request.key).not.toBe(REFUSED_KEY);
  });

  it('refuses a header without `match`, as any header it cannot read', () => {
    expect(() => identity('charge', { key: REFUSED_KEY, activityType: 'charge' } as ResumeKey)).toThrow(InvalidKeyInputError);
  });

  it('elsewhere: keyed as its own; the refused key is not looked up', () => {
    const { request, resumed } = identity('charge', { key: REFUSED_KEY, activityType: 'charge', match: 'other' });
    expect(resumed).toBe('other');
    expect(request.refusedKey).toBeUndefined();
  });

  it('a `same` header on a call of another type counts as `other`: only the refused type can sit in its place', () => {
    const { request, resumed } = identity('refund', { key: REFUSED_KEY, activityType: 'charge', match: 'same' });
    expect(resumed).toBe('other');
    expect(request.refusedKey).toBeUndefined();
  });

  it('under call scope, refuses a call made again elsewhere than the refused call\'s place, naming the setting', () => {
    const call = () => identity('charge', { key: REFUSED_KEY, activityType: 'sendSms', match: 'other' }, { scope: 'call' });
    expect(call).toThrow(IdempotencyConfigError);
    expect(call).toThrow(/activities\.charge\.scope.*own resumable\(\)/s);
  });

  it('under call scope with a custom key(), keys the call as its own', () => {
    const { request } = identity('charge', { key: REFUSED_KEY, activityType: 'sendSms', match: 'other' }, { scope: 'call', key: () => 'order-A' });
    expect(request.key).toMatch(/^[0-9a-f]{64}$/);
  });

  it('under call scope, in the refused call\'s place: allowed, the refused key decides', () => {
    const { request } = identity('charge', { key: REFUSED_KEY, activityType: 'charge', match: 'same' }, { scope: 'call' });
    expect(request.refusedKey).toBe(REFUSED_KEY);
  });
});

describe('a call-scoped write beside other writes in one resumable()', () => {
  const earlier = (...activityTypes: string[]) => ({
    [RESUMABLE_EARLIER_HEADER]: defaultPayloadConverter.toPayload({ activityTypes }),
  });
  const workerSettings: Record<string, ResolvedActivitySettings> = {
    charge: { ...settings, scope: 'call' },
    sendSms: settings,
    readBalance: { ...settings, guarded: false },
  };
  const settingsOf = (activityType: string) => workerSettings[activityType] ?? settings;

  it('is refused before the second write runs, naming the call-scoped one, whichever comes first', () => {
    expect(() => checkCallScopeAlone(info('charge'), earlier('sendSms'), workerSettings.charge!, settingsOf)).toThrow(/activities\.charge\.scope/);
    expect(() => checkCallScopeAlone(info('sendSms'), earlier('charge'), settings, settingsOf)).toThrow(/activities\.charge\.scope.*charge, sendSms/s);
    expect(() => checkCallScopeAlone(info('charge'), earlier('charge'), workerSettings.charge!, settingsOf)).toThrow(IdempotencyConfigError);
  });

  it('is allowed alone, or after reads that are not guarded', () => {
    expect(() => checkCallScopeAlone(info('charge'), {}, workerSettings.charge!, settingsOf)).not.toThrow();
    expect(() => checkCallScopeAlone(info('charge'), earlier('readBalance'), workerSettings.charge!, settingsOf)).not.toThrow();
  });

  it('lets writes on other scopes share a resumable()', () => {
    expect(() => checkCallScopeAlone(info('sendSms'), earlier('sendSms', 'readBalance'), settings, settingsOf)).not.toThrow();
  });

  it('names a malformed header as bad key input', () => {
    const headers = { [RESUMABLE_EARLIER_HEADER]: defaultPayloadConverter.toPayload({ activityTypes: 'charge' }) };
    expect(() => checkCallScopeAlone(info('charge'), headers, settings, settingsOf)).toThrow(InvalidKeyInputError);
  });
});
