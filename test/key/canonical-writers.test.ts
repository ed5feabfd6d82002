/**
 * The canonical form has two writers: a fast recursive one that almost every
 * call takes, and the careful iterative one it hands over to for anything
 * unusual. They must write the same text for every value, or a key would
 * depend on which one ran: thousands of generated values say they do.
 */
import { describe, expect, it } from 'vitest';
import { canonicalize, canonicalizeCarefully } from '../../src/key/canonical.js';

/** A small deterministic generator (mulberry32), so a failure reproduces. */
function randomFrom(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const KEYS = ['a', 'b', 'to', 'Z', '0', '1', '10', '2', '01', '4294967294', '4294967295', '$ref', '$$', '__proto__', 'with space', 'quo"te', 'ünï', '😀', '', 'a-b', 'x_y'];
const STRINGS = ['', 'plain', 'quo"te', 'back\\slash', 'line\nbreak', '\u2028', '\u0000', 'ünïcödé', '😀', '\ud800'];
const NUMBERS = [0, -0, 1, -1, 0.1, 1e21, 1e-7, 2 ** 53, -(2 ** 53) - 2, 123.456, Number.MAX_VALUE, Number.MIN_VALUE];

function generate(random: () => number, depth: number): unknown {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const kind = Math.floor(random() * (depth > 4 ? 7 : 10));
  switch (kind) {
    case 0:
      return pick(STRINGS);
    case 1:
      return pick(NUMBERS);
    case 2:
      return random() < 0.5;
    case 3:
      return random() < 0.5 ? null : undefined;
    case 4:
      return new Date(Math.floor(random() * 4e12));
    case 5:
      return Uint8Array.from({ length: Math.floor(random() * 5) }, () => Math.floor(random() * 256));
    case 6:
      return pick(STRINGS) + String(Math.floor(random() * 1000));
    case 7: {
      const items: unknown[] = [];
      const length = Math.floor(random() * 5);
      for (let index = 0; index < length; index++) if (random() < 0.9) items[index] = generate(random, depth + 1);
      items.length = length; // trailing holes count too
      return items;
    }
    default: {
      // Through JSON.parse, `__proto__` becomes an own key, as it does at the activity.
      const record: Record<string, unknown> = JSON.parse('{}');
      const size = Math.floor(random() * 6);
      for (let index = 0; index < size; index++) {
        Object.defineProperty(record, pick(KEYS), { value: generate(random, depth + 1), enumerable: true, configurable: true, writable: true });
      }
      return random() < 0.1 ? Object.assign(Object.create(null) as object, record) : record;
    }
  }
}

describe('the fast and the careful canonical writers', () => {
  it('write the same text for 5,000 generated values', () => {
    const random = randomFrom(20261201);
    for (let sample = 0; sample < 5_000; sample++) {
      const value = generate(random, 0);
      expect(canonicalize(value), `sample ${sample}`).toBe(canonicalizeCarefully(value));
    }
  });

  it('write the same text for arrays of objects that share their keys, in any order', () => {
    const items = [{ b: 1, a: 2 }, { a: 3, b: 4 }, { b: 5, a: 6, c: undefined }, { b: 7, a: 8, c: 9 }, { a: 10 }];
    expect(canonicalize(items)).toBe(canonicalizeCarefully(items));
    expect(canonicalize(items)).toBe('[{"a":2,"b":1},{"a":3,"b":4},{"a":6,"b":5},{"a":8,"b":7,"c":9},{"a":10}]');
  });

  it('hand deep nesting and bad values to the careful writer, with the same result', () => {
    let deep: unknown = 'bottom';
    for (let level = 0; level < 2_000; level++) deep = level % 2 ? [deep] : { level: deep };
    expect(canonicalize(deep)).toBe(canonicalizeCarefully(deep));
    const cyclic: Record<string, unknown> = { id: 1 };
    cyclic['self'] = { back: cyclic };
    expect(() => canonicalize({ cyclic }, 'args')).toThrow(/args\.cyclic\.self\.back is unsupported: the value contains a cycle/);
    expect(() => canonicalize([1, { n: Number.NaN }], 'args')).toThrow(/args\[1\]\.n is unsupported: NaN is not a finite number/);
  });

  // The fast writer quotes a string itself when it needs no escape, and writes a number with String():
  // each must be exactly JSON.stringify's text, which the careful writer uses.
  it('write every single UTF-16 code unit, and pairs around the escapes, as JSON.stringify does', () => {
    const strings: string[] = [];
    for (let unit = 0; unit <= 0xffff; unit++) {
      const char = String.fromCharCode(unit);
      strings.push(char, `a${char}`, `${char}z`);
    }
    strings.push('\ud83d\ude00', 'x\ud83d\ude00y', '\ude00\ud83d', '\u007f', '\u2028\u2029', 'a'.repeat(100_000) + '"');
    const differing = strings.filter(
      (string) => canonicalize(string) !== JSON.stringify(string) || canonicalize({ s: string }) !== canonicalizeCarefully({ s: string }),
    );
    expect(differing.map((string) => JSON.stringify(string.slice(0, 20)))).toEqual([]);
  });

  it('write numbers as JSON.stringify does', () => {
    const random = randomFrom(15);
    const numbers = [0, -0, 1e21, 1e-7, 1e-6, 123e-20, -1.5, 2 ** 53 + 2, Number.EPSILON, 5e-324, 1.7976931348623157e308];
    for (let sample = 0; sample < 10_000; sample++) {
      const bits = new DataView(new ArrayBuffer(8));
      bits.setUint32(0, Math.floor(random() * 2 ** 32));
      bits.setUint32(4, Math.floor(random() * 2 ** 32));
      const number = bits.getFloat64(0);
      if (Number.isFinite(number)) numbers.push(number);
      numbers.push(Math.floor(random() * 1e9) / 100);
    }
    const differing = numbers.filter(
      (number) => canonicalize([number]) !== canonicalizeCarefully([number]) || canonicalize(number) !== (number === 0 ? '0' : JSON.stringify(number)),
    );
    expect(differing).toEqual([]);
  });
});
