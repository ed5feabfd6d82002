import { execFile } from 'node:child_process';
import { createHash, createHmac } from 'node:crypto';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/index.js';
import { KeySalt, callKeysOf, canonicalize, deriveCallKeys, keyToUuid, scopeMaterial, uuidV5 } from '../../src/key/index.js';
import type { CustomKeyInput, KeyInput } from '../../src/key/index.js';

/** A fixed salt, as `migrate` keeps one in a schema's settings. */
const SALT_HEX = '8f1c0b5e2d7a4c9b1e3f5a7c9d0b2e4f6a8c0e2b4d6f8a0c2e4b6d8f0a2c4e6b';
const salt = new KeySalt(Buffer.from(SALT_HEX, 'hex'));
const deriveKey = (input: KeyInput, under: KeySalt = salt) => deriveCallKeys(input, under).key;
const customKeyOf = (input: CustomKeyInput, under: KeySalt = salt) => callKeysOf(input, '[]', under).key;
const fingerprintOf = (semanticArgs: unknown) => deriveCallKeys({ ...base, semanticArgs }, salt).fingerprint;

const base: KeyInput = {
  namespace: 'default',
  scopeMaterial: { scope: 'workflow', workflowId: 'order-42' },
  activityType: 'chargeCard',
  semanticArgs: [{ orderId: 'o-42', amountCents: 1999, currency: 'EUR' }],
};

describe('idempotency key', () => {
  it('is the HMAC-SHA256 of the canonical envelope under the key salt, as DESIGN.md specifies', () => {
    const { namespace, scopeMaterial: material, activityType, semanticArgs } = base;
    const envelope = canonicalize({ v: 1, namespace, scopeMaterial: material, activityType, semanticArgs });
    const expected = createHmac('sha256', Buffer.from(SALT_HEX, 'hex')).update(`key\u0000${envelope}`).digest('hex');
    expect(deriveKey(base)).toBe(expected);
    expect(deriveKey(base)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('is another key under another salt (another schema), and no plain sha256 of the envelope', () => {
    const { namespace, scopeMaterial: material, activityType, semanticArgs } = base;
    const envelope = canonicalize({ v: 1, namespace, scopeMaterial: material, activityType, semanticArgs });
    expect(deriveKey(base, new KeySalt(Buffer.from('00'.repeat(32), 'hex')))).not.toBe(deriveKey(base));
    expect(deriveKey(base)).not.toBe(createHash('sha256').update(envelope).digest('hex'));
  });

  it('refuses a salt too short to be one migrate made, naming it', () => {
    expect(() => new KeySalt(new Uint8Array(8))).toThrow(InvalidArgumentError);
    expect(() => new KeySalt(new Uint8Array(8))).toThrow(/keySalt|key salt is at least 16 bytes/);
  });

  it('is the same for the same logical input in two separate processes', async () => {
    const script = `
      import { KeySalt, deriveCallKeys } from './src/key/index.ts';
      process.stdout.write(deriveCallKeys(${JSON.stringify(base)}, new KeySalt(Buffer.from('${SALT_HEX}', 'hex'))).key);
    `;
    const root = fileURLToPath(new URL('../..', import.meta.url));
    const run = () =>
      promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: root });
    const [first, second] = await Promise.all([run(), run()]);
    expect(first.stdout).toBe(deriveKey(base));
    expect(second.stdout).toBe(first.stdout);
  });

  it('does not depend on property order in the arguments', () => {
    expect(deriveKey({ ...base, semanticArgs: [{ currency: 'EUR', amountCents: 1999, orderId: 'o-42' }] })).toBe(deriveKey(base));
  });

  const changes: Array<[string, Partial<KeyInput>]> = [
    ['the namespace', { namespace: 'billing' }],
    ['the scope material', { scopeMaterial: { scope: 'workflow', workflowId: 'order-43' } }],
    ['the scope itself', { scopeMaterial: { scope: 'run', runId: 'order-42' } }],
    ['the activity type', { activityType: 'refundCard' }],
    ['a semantic argument', { semanticArgs: [{ orderId: 'o-42', amountCents: 2000, currency: 'EUR' }] }],
    ['the number of arguments', { semanticArgs: [{ orderId: 'o-42', amountCents: 1999, currency: 'EUR' }, null] }],
  ];
  it.each(changes)('changes when %s changes', (_, change) => {
    expect(deriveKey({ ...base, ...change })).not.toBe(deriveKey(base));
  });

  it('names the bad argument when the input is unsupported', () => {
    expect(() => deriveKey({ ...base, semanticArgs: [{ orderId: 'o-42' }, { to: 10n }] })).toThrow(/args\[1\]\.to/);
  });

  it('keys a custom key by namespace and activity type, so one string cannot collide across them', () => {
    const custom = { namespace: 'default', activityType: 'chargeCard', customKey: 'order:42' };
    expect(customKeyOf(custom)).not.toBe(customKeyOf({ ...custom, activityType: 'placeCall' }));
    expect(customKeyOf(custom)).not.toBe(customKeyOf({ ...custom, namespace: 'billing' }));
    expect(customKeyOf(custom)).toBe(customKeyOf({ ...custom }));
    expect(callKeysOf(custom, '[1]', salt).key).toBe(customKeyOf(custom));
    // Given, but empty, missing, or beside a scope: every call of the type would share one key, or the wrong one be meant.
    for (const customKey of ['', undefined, 42]) {
      expect(() => callKeysOf({ ...custom, customKey } as unknown as CustomKeyInput, '[]', salt)).toThrow(/customKey.*non-empty string/);
    }
    expect(() => callKeysOf({ ...custom, scopeMaterial: base.scopeMaterial }, '[]', salt)).toThrow(/instead of a scopeMaterial/);
  });

  it('keys a call by its scope whatever else its input carries: a stray or inherited customKey is not a custom key', () => {
    const withStray = { ...base, customKey: 'shared' };
    expect(deriveCallKeys(withStray, salt)).toEqual(deriveCallKeys(base, salt));
    expect(deriveKey({ ...withStray, semanticArgs: [{ orderId: 'o-43' }] })).not.toBe(deriveKey(withStray));
    const inherited = Object.assign(Object.create({ customKey: 'shared' }) as object, { namespace: 'default', activityType: 'chargeCard', scopeMaterial: base.scopeMaterial });
    expect(callKeysOf(inherited as Omit<KeyInput, 'semanticArgs'>, '[1]', salt)).toEqual(callKeysOf({ namespace: 'default', activityType: 'chargeCard', scopeMaterial: base.scopeMaterial }, '[1]', salt));
  });

  it('fingerprints the arguments alone, under the salt, never equal to a key', () => {
    expect(fingerprintOf([{ a: 1, b: 2 }])).toBe(fingerprintOf([{ b: 2, a: 1 }]));
    expect(fingerprintOf([{ a: 1 }])).not.toBe(fingerprintOf([{ a: 2 }]));
    expect(fingerprintOf([{ a: 1 }])).not.toBe(createHash('sha256').update('[{"a":1}]').digest('hex'));
    expect(fingerprintOf([{ a: 1 }])).toBe(deriveCallKeys({ ...base, activityType: 'other', semanticArgs: [{ a: 1 }] }, salt).fingerprint);
    expect(fingerprintOf([{ a: 1 }])).toBe(callKeysOf({ namespace: 'other', activityType: 'other', customKey: 'k' }, '[{"a":1}]', salt).fingerprint);
    expect(fingerprintOf(base.semanticArgs)).not.toBe(deriveKey(base));
  });

  it('cannot be checked against guessed phone numbers without the salt; a plain sha256 could be', () => {
    const phone = '+4915112345678';
    const guesses = Array.from({ length: 10_000 }, (_, i) => `+49151123${String(40_000 + i).padStart(5, '0')}`);
    const custom = (candidate: string) => ({ namespace: 'default', activityType: 'sendSms', customKey: candidate });
    const unsalted = (candidate: string) =>
      createHash('sha256').update(canonicalize({ v: 1, namespace: 'default', activityType: 'sendSms', custom: candidate })).digest('hex');
    expect(guesses.find((guess) => unsalted(guess) === unsalted(phone))).toBe(phone);
    // Whoever lacks the schema's salt can only guess under another one: no guess matches.
    const key = customKeyOf(custom(phone));
    const elsewhere = new KeySalt(Buffer.from('11'.repeat(32), 'hex'));
    expect(guesses.find((guess) => customKeyOf(custom(guess), elsewhere) === key)).toBeUndefined();
  });
});

describe('scopes', () => {
  const site = { workflowId: 'wf', runId: 'run-1', activityId: '3' };

  it('keys workflow scope on the workflow id alone, so resets and new runs share it', () => {
    expect(scopeMaterial('workflow', site)).toEqual(scopeMaterial('workflow', { ...site, runId: 'run-2', activityId: '9' }));
  });

  it('keys run scope on the run id', () => {
    expect(scopeMaterial('run', site)).not.toEqual(scopeMaterial('run', { ...site, runId: 'run-2' }));
  });

  it('keys call scope on workflow, run and activity id', () => {
    expect(scopeMaterial('call', site)).not.toEqual(scopeMaterial('call', { ...site, activityId: '4' }));
  });

  it('keys a standalone activity on its activity id, whatever the scope', () => {
    const standalone = { activityId: 'act-7' };
    expect(scopeMaterial('workflow', standalone)).toEqual({ scope: 'standalone', activityId: 'act-7' });
    expect(scopeMaterial('call', standalone)).toEqual({ scope: 'standalone', activityId: 'act-7' });
  });
});

describe('the key as a UUID', () => {
  it('is a standard version 5 UUID (checked against the RFC example)', () => {
    expect(uuidV5('www.example.com', '6ba7b810-9dad-11d1-80b4-00c04fd430c8')).toBe('2ed6657d-e927-568b-95e1-2665a8aea6a2');
  });

  it('is the same for the same key and different for different keys', () => {
    const key = deriveKey(base);
    expect(keyToUuid(key)).toBe(keyToUuid(key));
    expect(keyToUuid(key)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(keyToUuid(key)).not.toBe(keyToUuid(deriveKey({ ...base, activityType: 'other' })));
  });
});
