/**
 * Found in review: the fast canonical writer tested Array.isArray first; the careful one tested
 * `instanceof Uint8Array` and `instanceof Date` first. An array whose prototype is Date.prototype or
 * Uint8Array.prototype (only a keyArgs can build one) was written by the fast writer as the array it
 * holds (`[1]`), while the careful writer threw a bare TypeError from Date.prototype.getTime / the
 * %TypedArray% buffer getter; `Object.create(Date.prototype)` threw one in both, which the interceptor
 * let escape as an ordinary (retryable) failure.
 *
 * Expected: the two writers agree, keeping the text the fast writer always gave an array (
 * refusing such arrays would change the key of an input accepted before), and a value that only looks
 * like a date is refused as invalid key input.
 */
import { describe, expect, it } from 'vitest';
import { InvalidKeyInputError } from '../../src/key/errors.js';
import { canonicalize } from '../../src/key/canonical.js';
import { canonicalizeCarefully } from '../support/canonical-oracle.js';

function outcome(write: () => string): string {
  try {
    return write();
  } catch (error) {
    return error instanceof InvalidKeyInputError ? 'InvalidKeyInputError' : `${(error as Error).name}: ${(error as Error).message}`;
  }
}

describe('the fast and the careful canonical writers on arrays with a foreign prototype', () => {
  it.each([
    ['Date.prototype', Date.prototype],
    ['Uint8Array.prototype', Uint8Array.prototype],
  ])('an array whose prototype is %s: both writers give the same answer', (_name, prototype) => {
    const make = () => Object.setPrototypeOf([1], prototype) as unknown;
    expect({ fast: outcome(() => canonicalize(make())), careful: outcome(() => canonicalizeCarefully(make())) }).toEqual({
      fast: '[1]',
      careful: '[1]',
    });
  });

  it('an object made from Date.prototype (not a date) is refused as invalid key input, not a TypeError', () => {
    expect(outcome(() => canonicalize({ at: Object.create(Date.prototype) }))).toBe('InvalidKeyInputError');
  });

  it('an Array subclass and a null-prototype array are still written as the arrays they hold, by both writers', () => {
    class Items extends Array<number> {}
    const subclassed = Items.from([1, 2]);
    const bare = Object.setPrototypeOf([1, 2], null) as unknown;
    for (const value of [subclassed, bare]) {
      expect({ fast: canonicalize(value), careful: canonicalizeCarefully(value) }).toEqual({ fast: '[1,2]', careful: '[1,2]' });
    }
  });
});
