/**
 * Found in review, on the canonical form (src/key/canonical.ts) and its fast writer: the fast and the careful
 * writer are held to each other over values the generated test leaves out, and pairs of
 * different values are held to different texts (a shared text is a shared key: one charge
 * answered with another's result).
 *
 * What held: unicode (lone surrogates, NFC/NFD, U+2028), -0/0 (one JSON number), 1e21, extreme
 * floats, holes, __proto__ as data, null prototypes, getters, symbol keys, toJSON, Map, Set,
 * typed arrays, ArrayBuffer, DataView, Buffer slices, class instances, boxed primitives,
 * proxies, 200,000 levels of nesting, 10 MB strings, `$`-keys against tags.
 *
 * What broke: an object is "plain" by its prototype alone, so a Uint8Array or a Date whose
 * prototype was set to null (or to Object.prototype) is written as a plain object: the bytes
 * [1] as {"0":1}, the date as {}. Each collides with a plain object (only a keyArgs that builds
 * such a value can reach it: no payload converter produces one).
 */
import { describe, expect, it } from 'vitest';
import { canonicalize } from '../../src/key/canonical.js';
import { canonicalizeCarefully } from '../support/canonical-oracle.js';

function textOrError(write: () => string): string {
  try {
    return write();
  } catch (error) {
    return `error: ${(error as Error).message}`;
  }
}

const sameBoth = (value: unknown) => expect(textOrError(() => canonicalize(value))).toBe(textOrError(() => canonicalizeCarefully(value)));

describe('the canonical writers on values the generated test leaves out', () => {
  const values: Record<string, () => unknown> = {
    nfc: () => 'Jos\u00e9',
    nfd: () => 'Jose\u0301',
    lineSeparator: () => '\u2028\u2029',
    loneSurrogates: () => ['\ud800', '\udc00', '\udc00\ud800'],
    numbers: () => [-0, 0, 1e21, 1e-7, 5e-324, Number.MAX_VALUE, 2 ** 53 + 1],
    holes: () => {
      const holes: unknown[] = [];
      holes[1] = 1;
      holes.length = 3;
      return holes;
    },
    protoKey: () => JSON.parse('{"__proto__":{"admin":true},"b":2}'),
    nullPrototype: () => Object.assign(Object.create(null) as object, { a: 1, $undefined: true }),
    getter: () => Object.defineProperty({}, 'g', { get: () => 5, enumerable: true }),
    symbolKey: () => ({ [Symbol('s')]: 1, a: 1 }),
    toJSON: () => ({ toJSON: () => 1 }),
    map: () => new Map([[1, 2]]),
    set: () => new Set([1]),
    int16: () => new Int16Array([1]),
    clamped: () => new Uint8ClampedArray([1]),
    arrayBuffer: () => new ArrayBuffer(2),
    dataView: () => new DataView(new ArrayBuffer(1)),
    bufferSlice: () => Buffer.from([0, 1, 2, 3]).subarray(1, 3),
    classInstance: () => new (class Charge { amount = 1 })(),
    boxed: () => [new String('x')],
    proxy: () => new Proxy({ a: 1 }, {}),
    indexKeys: () => ({ '10': 1, '2': 2, '01': 3, '4294967295': 4, '4294967294': 5 }),
    dollarKeys: () => ({ $bytes: 'AQ==', $$date: 1 }),
    huge: () => 'x'.repeat(10_000_000),
    deep: () => {
      let deep: unknown = 'bottom';
      for (let level = 0; level < 200_000; level++) deep = level % 2 ? [deep] : { a: deep };
      return deep;
    },
  };
  for (const [name, make] of Object.entries(values)) it(`writes ${name} alike in both`, () => sameBoth(make()));
});

describe('different values, different texts', () => {
  const pairs: Array<[string, () => unknown, () => unknown]> = [
    ['NFC and NFD', () => 'Jos\u00e9', () => 'Jose\u0301'],
    ['a lone surrogate and U+FFFD', () => '\ud800', () => '\ufffd'],
    ['a lone surrogate and its escape as text', () => '\ud800', () => '\\ud800'],
    ['1e21 and "1e+21"', () => 1e21, () => '1e+21'],
    ['bytes and the tag as a plain object', () => new Uint8Array([1]), () => ({ $bytes: 'AQ==' })],
    ['undefined and the tag as a plain object', () => [undefined], () => [{ $undefined: true }]],
    ['a date and the tag as a plain object', () => new Date(0), () => ({ $date: '1970-01-01T00:00:00.000Z' })],
    ['a key "1" and an array', () => ({ '0': 'a' }), () => ['a']],
    ['bytes with a null prototype and a plain object', () => Object.setPrototypeOf(new Uint8Array([1]), null), () => ({ '0': 1 })],
    ['a date with a plain prototype and an empty object', () => Object.setPrototypeOf(new Date(0), Object.prototype), () => ({})],
  ];
  for (const [name, a, b] of pairs) {
    it(`${name}`, () => {
      expect(textOrError(() => canonicalize(a()))).not.toBe(textOrError(() => canonicalize(b())));
    });
  }
});
