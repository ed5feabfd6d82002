/**
 * What a worker makes of a row's signature, without a database: a row is obeyed only when its MAC
 * checks under a secret the worker holds (or it is unsigned and the worker obeys unsigned rows);
 * one signed by a secret it lacks is `unverifiable` (a rollout in progress: refused retryably), one
 * whose MAC fails under a secret it holds is `rejected` (refused for a person). Secrets a worker's
 * settings get wrong, secret ids an operator mistypes, and `keys re-sign` without a signing secret
 * are refused before anything is signed.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { ClaimOperations, InvalidSecretError, SecretRequiredError } from '../../src/index.js';
import { RecordSecret, RecordSigner, secretIds } from '../../src/store/record-signing.js';
import type { SignedFields, TrustOptions } from '../../src/store/record-signing.js';

const OLD = 'record-signing-unit-old-secret-of-32-bytes-or-more';
const NEW = 'record-signing-unit-new-secret-of-32-bytes-or-more';

const row: SignedFields = {
  namespace: 'default',
  key: 'a'.repeat(64),
  activityType: 'chargeCard',
  fingerprint: 'b'.repeat(64),
  state: 'completed',
  token: 'c3f1b2de-0000-4000-8000-000000000001',
  attempt: 1,
  claimedBy: 'host-3/4711',
  workflowId: 'wf-1',
  runId: 'run-1',
  activityId: '1',
  result: { metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: Buffer.from('{"id":"ch_1"}').toString('base64') },
  outcomeNote: null,
  outcomeDetail: null,
};

/** One change a writer without the secret could make to each signed field. */
const EDITS: { [Field in keyof SignedFields]: SignedFields[Field] } = {
  namespace: 'other',
  key: 'd'.repeat(64),
  activityType: 'sendNewsletter',
  fingerprint: 'e'.repeat(64),
  state: 'unknown',
  token: 'c3f1b2de-0000-4000-8000-000000000002',
  attempt: 2,
  claimedBy: 'attacker/1',
  workflowId: 'wf-2',
  runId: null,
  activityId: '2',
  result: { metadata: {}, data: Buffer.from('{"id":"ch_FORGED"}').toString('base64') },
  outcomeNote: 'NotSentError: nothing reached the vendor',
  outcomeDetail: { metadata: {}, data: '' },
};

describe('a row is obeyed only when its signature checks', () => {
  const signer = new RecordSigner({ secret: NEW, previousSecrets: [OLD] });

  it('a row signed with the signing secret, or a previous one, is verified; new rows are signed with the signing one', () => {
    const signature = signer.sign(row);
    expect(signature.secretId).toBe(new RecordSecret(NEW).id);
    expect(signer.check(row, signature)).toBe('verified');
    expect(signer.check(row, new RecordSigner({ secret: OLD }).sign(row))).toBe('verified');
  });

  it.each(Object.keys(EDITS) as Array<keyof SignedFields>)('a row whose %s was changed after signing is rejected', (field) => {
    expect(signer.check({ ...row, [field]: EDITS[field] }, signer.sign(row))).toBe('rejected');
  });

  it('a MAC forged, cut short, or removed beside the id of a secret held here is rejected', () => {
    const { secretId } = signer.sign(row);
    for (const mac of ['ab'.repeat(32), 'ab'.repeat(16), '', 'not hex at all', null]) {
      expect({ mac, authenticity: signer.check(row, { mac, secretId }) }).toEqual({ mac, authenticity: 'rejected' });
    }
  });

  it("a row signed by a secret this worker does not hold is unverifiable, whatever its MAC", () => {
    const elsewhere = new RecordSigner({ secret: 'record-signing-unit-third-secret-of-32-bytes-or-more' }).sign(row);
    expect(signer.check(row, elsewhere)).toBe('unverifiable');
    expect(new RecordSigner({ secret: NEW }).check(row, new RecordSigner({ secret: OLD }).sign(row))).toBe('unverifiable');
  });

  it("an unsigned row is unverifiable to a worker that signs, unless it lists 'unsigned'; obeyed by one that signs nothing", () => {
    const unsigned = { mac: null, secretId: null };
    expect(signer.check(row, unsigned)).toBe('unverifiable');
    expect(new RecordSigner({ secret: NEW, previousSecrets: ['unsigned'] }).check(row, unsigned)).toBe('not-checked');
    expect(new RecordSigner().check(row, unsigned)).toBe('not-checked');
    expect(new RecordSigner().sign(row)).toEqual(unsigned);
  });
});

describe('record secrets a worker is given wrong are refused when the store is made', () => {
  it.each<[string, unknown, RegExp]>([
    ['a secret given as undefined (a secret manager that answered nothing)', { secret: undefined }, /your secret manager returned nothing/],
    ['a secret given as null', { secret: null }, /your secret manager returned nothing/],
    ['previous secrets without a signing one', { previousSecrets: [OLD] }, /previousSecrets without secret/],
    ['previous secrets that are not an array', { secret: NEW, previousSecrets: OLD }, /previousSecrets must be an array/],
    ['a secret shorter than 32 bytes', { secret: 'short' }, /at least 32 random bytes/],
    ['a previous secret shorter than 32 bytes', { secret: NEW, previousSecrets: ['short'] }, /at least 32 random bytes/],
    ['a secret that is neither a string nor bytes', { secret: 42 }, /string or a Uint8Array/],
    ['an array of 32 numbers, which Buffer.from would take as bytes', { secret: Array.from({ length: 32 }, () => 7) }, /string or a Uint8Array/],
  ])('%s', (_, options, message) => {
    expect(() => new RecordSigner(options as TrustOptions)).toThrow(InvalidSecretError);
    expect(() => new RecordSigner(options as TrustOptions)).toThrow(message);
  });

  it('a secret of 32 bytes, as a string or as bytes, is taken', () => {
    expect(new RecordSigner({ secret: 'x'.repeat(32) }).signingSecretId).toMatch(/^[0-9a-f]{8}$/);
    expect(new RecordSigner({ secret: new Uint8Array(32).fill(7) }).signingSecretId).toMatch(/^[0-9a-f]{8}$/);
  });
});

describe('secret ids an operator names', () => {
  it('are read as `keys status` prints them, whatever their case or spaces', () => {
    expect(secretIds('--distrust', [' DEADBEEF', '0123abcd'])).toEqual(['deadbeef', '0123abcd']);
  });

  it('are refused when they are not ids, or not a list of them: a typo would distrust nothing', () => {
    for (const typo of ['deadbee', 'deadbeef0', 'deadbeeg', '', 7]) {
      expect(() => secretIds('--distrust', [typo])).toThrow(/is not a secret id/);
    }
    expect(() => secretIds('distrust', 'deadbeef')).toThrow(/expected an array of secret ids/);
  });
});

describe('keys re-sign', () => {
  it('without a signing secret is refused before any statement is sent', async () => {
    // Nothing listens there: a statement would fail to connect, not with SecretRequiredError.
    const pool = new pg.Pool({ connectionString: 'postgres://nobody@127.0.0.1:1/none', connectionTimeoutMillis: 1_000 });
    const operations = new ClaimOperations(pool, { previousSecrets: ['unsigned'] });
    await expect(operations.resign()).rejects.toThrow(SecretRequiredError);
    await pool.end();
  });
});
