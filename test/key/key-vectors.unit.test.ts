/**
 * The key spec (docs/key-spec.md) and its vectors (test/vectors/keys.json): this library and the
 * Python reference (spec/python) both compute every recorded canonical text, key, fingerprint and
 * UUID from the vector's inputs alone. The vectors are held fixed: nothing here writes them, and a
 * vector that changes is a key that changed.
 */
import { execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import {
  InvalidKeyInputError,
  KEY_FORMAT_VERSION,
  KEY_UUID_NAMESPACE,
  KeySalt,
  callKeysOf,
  canonicalize,
  deriveCallKeys,
  keyToUuid,
  scopeMaterial,
} from '../../src/key/index.js';
import { semanticArgsOf } from '../vectors/inputs.js';
import type { CallVector, CustomVector, RefusalVector, Vector, VectorFile } from '../vectors/inputs.js';
import { marksOf } from '../vectors/marks.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const VECTORS = join(ROOT, 'test/vectors/keys.json');
const REFERENCE = join(ROOT, 'spec/python/temporal_idempotency_key.py');

const file = JSON.parse(readFileSync(VECTORS, 'utf8')) as VectorFile;
const ofKind = <K extends Vector['kind']>(kind: K) =>
  file.vectors.filter((vector): vector is Extract<Vector, { kind: K }> => vector.kind === kind).map((vector) => [vector.name, vector] as const);

function computedCall(vector: CallVector): CallVector['expected'] {
  const semanticArgs = semanticArgsOf(vector);
  const material = scopeMaterial(vector.scope, vector.callSite);
  const { key, fingerprint } = deriveCallKeys(
    { namespace: vector.namespace, activityType: vector.activityType, scopeMaterial: material, semanticArgs },
    new KeySalt(Buffer.from(vector.salt, 'hex')),
  );
  return {
    scopeMaterial: canonicalize(material),
    canonicalArgs: canonicalize(semanticArgs, 'args'),
    envelope: canonicalize({ v: KEY_FORMAT_VERSION, namespace: vector.namespace, scopeMaterial: material, activityType: vector.activityType, semanticArgs }),
    key,
    fingerprint,
    uuid: keyToUuid(key),
  };
}

function computedCustom(vector: CustomVector): CustomVector['expected'] {
  const semanticArgs = semanticArgsOf(vector);
  const salt = new KeySalt(Buffer.from(vector.salt, 'hex'));
  const { key, fingerprint } = callKeysOf({ namespace: vector.namespace, activityType: vector.activityType, customKey: vector.customKey }, canonicalize(semanticArgs, 'args'), salt);
  return {
    canonicalArgs: canonicalize(semanticArgs, 'args'),
    envelope: canonicalize({ v: KEY_FORMAT_VERSION, namespace: vector.namespace, activityType: vector.activityType, custom: vector.customKey }),
    key,
    fingerprint,
    uuid: keyToUuid(key),
  };
}

/** The spec's hash: HMAC-SHA256 under the salt of the purpose, a NUL and the text. */
const hmac = (saltHex: string, purpose: string, text: string) =>
  createHmac('sha256', Buffer.from(saltHex, 'hex')).update(`${purpose}\u0000${text}`, 'utf8').digest('hex');

interface Run {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
}

function runReference(vectorsPath: string): Run {
  try {
    const stdout = execFileSync('python3', [REFERENCE, 'check', vectorsPath], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return { status: 0, stdout, stderr: '' };
  } catch (error) {
    const failed = error as { status: number | null; stdout: string; stderr: string };
    return { status: failed.status ?? -1, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('the key vectors', () => {
  it('are format 1 under this library\'s UUID namespace: at least 200 keyed calls, custom keys and refusals, each named once', () => {
    expect(file.keyFormatVersion).toBe(KEY_FORMAT_VERSION);
    expect(file.uuidNamespace).toBe(KEY_UUID_NAMESPACE);
    expect(ofKind('call').length).toBeGreaterThanOrEqual(200);
    expect(ofKind('custom').length).toBeGreaterThan(0);
    expect(ofKind('refusal').length).toBeGreaterThan(0);
    expect(new Set(file.vectors.map((vector) => vector.name)).size).toBe(file.vectors.length);
  });

  it('carry the marks their inputs call for, and only those', () => {
    for (const vector of file.vectors) expect(vector.marks, vector.name).toEqual(marksOf(vector));
  });
});

describe('the library on the key vectors', () => {
  it.each(ofKind('call'))('call: %s', (_name, vector) => {
    expect(computedCall(vector)).toEqual(vector.expected);
    expect(hmac(vector.salt, 'key', vector.expected.envelope)).toBe(vector.expected.key);
    expect(hmac(vector.salt, 'fingerprint', vector.expected.canonicalArgs)).toBe(vector.expected.fingerprint);
  });

  it.each(ofKind('custom'))('custom key: %s', (_name, vector) => {
    expect(computedCustom(vector)).toEqual(vector.expected);
    expect(hmac(vector.salt, 'key', vector.expected.envelope)).toBe(vector.expected.key);
  });

  it.each(ofKind('refusal'))('refused: %s', (_name, vector: RefusalVector) => {
    let refusal: unknown;
    try {
      canonicalize(semanticArgsOf(vector), 'args');
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(InvalidKeyInputError);
    const { path, reason } = refusal as InvalidKeyInputError;
    expect({ path, reason }).toEqual(vector.expected.refused);
  });
});

describe('the Python reference on the key vectors', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'key-vectors-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('computes every vector from its inputs', () => {
    const run = runReference(VECTORS);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain(`checked ${file.vectors.length} vectors`);
  });

  it('and the library both fail a copy of the file with one key changed, naming the vector and both keys', () => {
    const [name, vector] = ofKind('call').find(([, candidate]) => candidate.marks.includes('lone-surrogate'))!;
    const last = vector.expected.key.at(-1)!;
    const altered = vector.expected.key.slice(0, -1) + (last === '0' ? '1' : '0');
    const copy = { ...file, vectors: file.vectors.map((each) => (each === vector ? { ...vector, expected: { ...vector.expected, key: altered } } : each)) };
    const copyPath = join(scratch, 'keys-altered.json');
    writeFileSync(copyPath, JSON.stringify(copy));

    const run = runReference(copyPath);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(`vector "${name}": key differs`);
    expect(run.stderr).toContain(altered);
    expect(run.stderr).toContain(vector.expected.key);

    const reread = (JSON.parse(readFileSync(copyPath, 'utf8')) as VectorFile).vectors.find((each) => each.name === name) as CallVector;
    expect(computedCall(reread).key).not.toBe(reread.expected.key);
    expect(computedCall(reread).key).toBe(vector.expected.key);
  });
});
