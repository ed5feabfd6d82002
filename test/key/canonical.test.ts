import { describe, expect, it } from 'vitest';
import { InvalidKeyInputError, canonicalize } from '../../src/key/index.js';

describe('canonical form', () => {
  it('sorts object keys, so property order does not change the text', () => {
    expect(canonicalize({ b: 1, a: { d: [1, 2], c: 'x' } })).toBe(canonicalize({ a: { c: 'x', d: [1, 2] }, b: 1 }));
  });

  it('keeps array order', () => {
    expect(canonicalize([1, 2])).not.toBe(canonicalize([2, 1]));
  });

  it('never gives two different values the same text', () => {
    const distinct: unknown[] = [
      null,
      undefined,
      0,
      '0',
      false,
      'false',
      [],
      {},
      [null],
      [undefined],
      new Uint8Array([1, 2]),
      Buffer.from([1, 2]).toString('base64'),
      { $bytes: 'AQI=' },
      { $undefined: true },
      { $$undefined: true },
      new Date('2026-01-01T00:00:00.000Z'),
      '2026-01-01T00:00:00.000Z',
      { $date: '2026-01-01T00:00:00.000Z' },
      { a: 1 },
      { a: '1' },
      { a: [1] },
    ];
    const texts = distinct.map((value) => canonicalize(value));
    expect(new Set(texts).size).toBe(distinct.length);
  });

  it('treats an undefined property as absent, as the JSON payload converter does', () => {
    expect(canonicalize({ a: 1, b: undefined })).toBe(canonicalize({ a: 1 }));
  });

  it('tags byte arrays by content, whatever their view', () => {
    const backing = new Uint8Array([9, 1, 2, 9]);
    expect(canonicalize(backing.subarray(1, 3))).toBe(canonicalize(new Uint8Array([1, 2])));
  });

  it('keeps a `__proto__` key (JSON.parse makes it an own property) as data, so it cannot vanish', () => {
    const withProto = JSON.parse('{"to":"+4912345","cents":500,"__proto__":{"memo":"rent"}}') as unknown;
    expect(canonicalize(withProto)).not.toBe(canonicalize({ to: '+4912345', cents: 500 }));
    expect(canonicalize(withProto)).toContain('"__proto__":{"memo":"rent"}');
  });

  it('orders array-index keys first, numerically, as key format 1 always has', () => {
    expect(canonicalize({ b: 1, 10: 2, 2: 3, a: 4, '01': 5 })).toBe('{"2":3,"10":2,"01":5,"a":4,"b":1}');
  });

  it.each([4_000, 100_000])('gives arguments nested %i deep a text instead of overflowing the stack', (depth) => {
    let nested: unknown = { leaf: true };
    for (let level = 0; level < depth; level++) nested = level % 2 ? [nested] : { inner: nested };
    const text = canonicalize(nested, 'args');
    expect(text.length).toBeGreaterThan(depth * 2);
    expect(text.startsWith(depth % 2 ? '{"inner":[' : '[{"inner":')).toBe(true);
  });

  it('accepts shared references that are not cycles', () => {
    const shared = { x: 1 };
    expect(() => canonicalize({ a: shared, b: shared })).not.toThrow();
  });

  const unsupported: Array<[string, unknown, string, RegExp]> = [
    ['NaN', { to: NaN }, 'args.to', /finite/],
    ['Infinity', [1, -Infinity], 'args[1]', /finite/],
    ['a BigInt', { amount: 10n }, 'args.amount', /BigInt/],
    ['a symbol', [{ s: Symbol('x') }], 'args[0].s', /symbol/],
    ['a function', [0, { to: () => 1 }], 'args[1].to', /function/],
    ['a Map', { m: new Map() }, 'args.m', /Map/],
    ['a class instance', [new (class Money {})()], 'args[0]', /Money/],
    ['an invalid Date', { when: new Date('nope') }, 'args.when', /invalid Date/],
    ['a key that is not an identifier (data, not a field: shown by position)', { 'first name': () => 1 }, 'args[key #1]', /function/],
  ];
  it.each(unsupported)('rejects %s with an error naming its path', (_, value, path, reason) => {
    const error = catchError(() => canonicalize(value, 'args'));
    expect(error).toBeInstanceOf(InvalidKeyInputError);
    expect((error as InvalidKeyInputError).path).toBe(path);
    expect((error as InvalidKeyInputError).message).toContain(path);
    expect((error as InvalidKeyInputError).reason).toMatch(reason);
  });

  it('rejects a cycle, naming where it closes', () => {
    const order: Record<string, unknown> = { id: 1, lines: [{}] };
    (order['lines'] as Array<Record<string, unknown>>)[0]!['order'] = order;
    const error = catchError(() => canonicalize([order], 'args'));
    expect(error).toBeInstanceOf(InvalidKeyInputError);
    expect((error as InvalidKeyInputError).path).toBe('args[0].lines[0].order');
    expect((error as InvalidKeyInputError).reason).toMatch(/cycle/);
  });

  // A keyArgs or key() can build a cycle (JSON cannot carry one). Found where it closes, not after
  // following it down: each turn round it rewrites every sibling before it, which ran a worker out of
  // memory (50,000 siblings) or out of string length (one 1.1M-character sibling: a bare RangeError).
  it('rejects a cycle where it first closes, whatever comes before it', () => {
    const document: Record<string, unknown> = { body: 'x'.repeat(1_100_000) };
    document['self'] = document;
    const error = catchError(() => canonicalize(document, 'keyArgs'));
    expect(error).toBeInstanceOf(InvalidKeyInputError);
    expect((error as InvalidKeyInputError).path).toBe('keyArgs.self');
  });

  // Only a keyArgs or key() can hand over such a value; the error must still say where, not escape raw.
  it('names where a value could not be read (a getter that throws), as a bad key input', () => {
    const order = { id: 7, lines: [{ sku: 'A' }, Object.defineProperty({}, 'sku', { enumerable: true, get: () => { throw new TypeError('lazy field not loaded'); } })] };
    const error = catchError(() => canonicalize(order, 'keyArgs'));
    expect(error).toBeInstanceOf(InvalidKeyInputError);
    expect((error as InvalidKeyInputError).path).toBe('keyArgs.lines[1]');
    expect((error as InvalidKeyInputError).reason).toMatch(/reading it threw TypeError: lazy field not loaded/);
  });
});

function catchError(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
}
