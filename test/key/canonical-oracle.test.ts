/**
 * The one canonical writer in src against the test oracle (test/support/canonical-oracle.ts, the careful
 * writer it replaced): for every value fast-check makes, the same text, or the same refusal naming the
 * same path. A key that depended on which writer ran would be a second key for one call.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalize } from '../../src/key/canonical.js';
import { canonicalizeCarefully } from '../support/canonical-oracle.js';

/** Keys that sort, escape or name specially: array indexes, `$`, `__proto__`, non-identifiers. */
const specialKeys = fc.constantFrom('0', '1', '10', '2', '01', '4294967294', '4294967295', '$ref', '$$', '__proto__', 'with space', 'quo"te', 'ünï', '😀', '', 'a-b', 'x_y');
const keys = fc.oneof(specialKeys, fc.string({ maxLength: 6 }), fc.string({ unit: 'binary', maxLength: 4 }));

const numbers = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
  fc.constantFrom(0, -0, 1e21, 1e-7, 2 ** 53, Number.MAX_VALUE, Number.MIN_VALUE),
);

/** Values as activities receive them, plus what the writer must refuse (NaN, BigInt, class instances). */
const values = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme-composite' })),
    numbers,
    fc.boolean(),
    fc.constantFrom(null, undefined),
    fc.date({ noInvalidDate: true }),
    fc.uint8Array({ maxLength: 6 }),
    fc.sparseArray(tie('value'), { maxLength: 5 }),
    fc.array(tie('value'), { maxLength: 5 }),
    fc
      .array(fc.tuple(keys, tie('value')), { maxLength: 6 })
      .chain((entries) =>
        fc.constantFrom('plain', 'null-prototype').map((kind) => {
          // Through JSON.parse, `__proto__` becomes an own key, as it does at the activity.
          const record: Record<string, unknown> = kind === 'plain' ? JSON.parse('{}') : Object.create(null);
          for (const [key, value] of entries) Object.defineProperty(record, key, { value, enumerable: true, configurable: true, writable: true });
          return record;
        }),
      ),
  ),
})).value;

const refused = fc.constantFrom<unknown>(Number.NaN, Number.POSITIVE_INFINITY, 10n, Symbol('s'), () => 1, new Map(), new Date(Number.NaN), new (class Money {})());

/** `value` with one refused value placed somewhere inside it, if it has room. */
const withRefused = fc.tuple(values, refused, fc.nat()).map(([value, bad, place]) => {
  const containers: Array<Record<string, unknown> | unknown[]> = [];
  const walk = (each: unknown): void => {
    if (Array.isArray(each) || (typeof each === 'object' && each !== null && (Object.getPrototypeOf(each) === Object.prototype || Object.getPrototypeOf(each) === null))) {
      containers.push(each as Record<string, unknown>);
      for (const child of Object.values(each)) walk(child);
    }
  };
  walk(value);
  if (containers.length === 0) return [bad];
  const target = containers[place % containers.length]!;
  if (Array.isArray(target)) target.push(bad);
  else Object.defineProperty(target, 'bad', { value: bad, enumerable: true, configurable: true, writable: true });
  return value;
});

function outcomeOf(write: () => string): { text: string } | { error: string } {
  try {
    return { text: write() };
  } catch (error) {
    return { error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
  }
}

describe('the canonical writer, against the oracle', () => {
  it('writes the same text for every generated value', () => {
    fc.assert(
      fc.property(values, (value) => {
        expect(canonicalize(value, 'args')).toBe(canonicalizeCarefully(value, 'args'));
      }),
      { numRuns: 3_000 },
    );
  });

  it('refuses the same values, naming the same path', () => {
    fc.assert(
      fc.property(withRefused, (value) => {
        const ours = outcomeOf(() => canonicalize(value, 'args'));
        expect('error' in ours, 'a refused value was written').toBe(true);
        expect(ours).toEqual(outcomeOf(() => canonicalizeCarefully(value, 'args')));
      }),
      { numRuns: 1_000 },
    );
  });

  it('writes arrays of objects that share their keys, in any order, as the oracle does', () => {
    const items = [{ b: 1, a: 2 }, { a: 3, b: 4 }, { b: 5, a: 6, c: undefined }, { b: 7, a: 8, c: 9 }, { a: 10 }];
    expect(canonicalize(items)).toBe(canonicalizeCarefully(items));
    expect(canonicalize(items)).toBe('[{"a":2,"b":1},{"a":3,"b":4},{"a":6,"b":5},{"a":8,"b":7,"c":9},{"a":10}]');
  });

  it('writes deep nesting, and names where a cycle closes, past the depth the cycle check starts at', () => {
    let deep: unknown = 'bottom';
    for (let level = 0; level < 2_000; level++) deep = level % 2 ? [deep] : { level: deep };
    expect(canonicalize(deep)).toBe(canonicalizeCarefully(deep));
    const cyclic: Record<string, unknown> = { id: 1 };
    cyclic['self'] = { back: cyclic };
    expect(() => canonicalize({ cyclic }, 'args')).toThrow(/args\.cyclic\.self\.back is unsupported: the value contains a cycle/);
    let chain: Record<string, unknown> = { leaf: 1 };
    const bottom = chain;
    for (let level = 0; level < 700; level++) chain = { next: chain };
    bottom['loop'] = chain.next;
    expect(outcomeOf(() => canonicalize(chain, 'args'))).toEqual(outcomeOf(() => canonicalizeCarefully(chain, 'args')));
  });

  // The writer quotes a string itself when it needs no escape, and writes a number with String(): each
  // must be exactly JSON.stringify's text.
  it('writes every single UTF-16 code unit, and pairs around the escapes, as JSON.stringify does', () => {
    const strings: string[] = [];
    for (let unit = 0; unit <= 0xffff; unit++) {
      const char = String.fromCharCode(unit);
      strings.push(char, `a${char}`, `${char}z`);
    }
    strings.push('\ud83d\ude00', 'x\ud83d\ude00y', '\ude00\ud83d', '\u007f', '\u2028\u2029', 'a'.repeat(100_000) + '"');
    const differing = strings.filter((string) => canonicalize(string) !== JSON.stringify(string));
    expect(differing.map((string) => JSON.stringify(string.slice(0, 20)))).toEqual([]);
  });

  it('writes numbers as JSON.stringify does, -0 as 0', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (number) => {
        expect(canonicalize(number)).toBe(number === 0 ? '0' : JSON.stringify(number));
      }),
      { numRuns: 10_000 },
    );
  });
});
