/** The shape `resolve` compares an operator's result by: structure and types, never contents. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fits, shapeOf, shapeText } from '../../src/cli/result-shape.js';

describe('result shapes', () => {
  it('a value always fits its own shape, and one like it with other contents', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(fits(shapeOf(value), shapeOf(value))).toBe(true);
      }),
    );
    expect(fits(shapeOf({ chargeId: 'ch_1', amount: 5 }), shapeOf({ chargeId: 'ch_2', amount: 7 }))).toBe(true);
  });

  it("tells the vendor's record from the activity's return value", () => {
    const returned = shapeOf({ chargeId: 'ch_1' });
    expect(fits(shapeOf({ id: 'ch_1' }), returned)).toBe(false);
    expect(fits(shapeOf({ chargeId: 'ch_1', status: 'succeeded' }), returned)).toBe(false);
    expect(fits(shapeOf('ch_1'), returned)).toBe(false);
    expect(fits(shapeOf({ chargeId: 1 }), returned)).toBe(false);
  });

  it('lets null stand for any value, and an empty array for any array', () => {
    expect(fits(shapeOf({ chargeId: null }), shapeOf({ chargeId: 'ch_1' }))).toBe(true);
    expect(fits(shapeOf({ lines: [{ sku: 'a' }] }), shapeOf({ lines: [] }))).toBe(true);
    expect(fits(shapeOf({ lines: [{ sku: 'a' }] }), shapeOf({ lines: [{ sku: 'b', qty: 1 }] }))).toBe(false);
  });

  it('is written as TypeScript writes a type, with no contents', () => {
    expect(shapeText(shapeOf({ chargeId: 'ch_secret', amount: 5, tags: ['a'], 'a-b': null }))).toBe(
      '{ "a-b": null, amount: number, chargeId: string, tags: string[] }',
    );
    expect(shapeText(shapeOf([1, 'a']))).toBe('(number | string)[]');
    expect(shapeText(shapeOf(new Uint8Array([1])))).toBe('bytes');
  });
});
