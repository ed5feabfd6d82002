/**
 * Found in review: commit 4705f7f (canonical form) made both writers refuse an array whose
 * prototype is neither an array, nor derived from this realm's Array.prototype, nor null
 * (`isPlainArray`, src/key/canonical.ts). That refuses more than the Date.prototype / Uint8Array.prototype
 * arrays it meant: an array whose prototype is Object.prototype or a plain object, an Array subclass
 * built in another realm (`vm`), or an array whose prototype derives from another realm's
 * Array.prototype. Every one of these was accepted by 54d2b6f, by both writers, with the text of the
 * array it holds (`[1,2]`), which is exactly what JSON (the payload converter) carries for it. After
 * the upgrade, the same `keyArgs` output is refused as IdempotencyInvalidKeyInput (non-retryable): a
 * workflow whose call was claimed (or completed) under the old release fails its next attempt or its
 * reset instead of finding its record. No double call, but a key that changed for an accepted input.
 *
 * Expected: inputs 54d2b6f accepted keep their text (`[1,2]`), in both writers.
 */
import vm from 'node:vm';
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

const realm = vm.createContext({});

describe('arrays 54d2b6f accepted, with a prototype that is not an array', () => {
  it.each([
    ['Object.prototype', () => Object.setPrototypeOf([1, 2], Object.prototype) as unknown],
    ['a plain object', () => Object.setPrototypeOf([1, 2], {}) as unknown],
    ['an Array subclass from another realm', () => vm.runInContext('{ class Items extends Array {} Items.from([1, 2]) }', realm) as unknown],
    ['an object derived from another realm\'s Array.prototype', () => Object.setPrototypeOf([1, 2], Object.create(vm.runInContext('Array.prototype', realm) as object)) as unknown],
  ])('prototype %s: JSON carries [1,2]; both writers keep the key 54d2b6f gave it', (_name, make) => {
    expect(JSON.stringify(make()), 'what the payload converter carries').toBe('[1,2]');
    expect({ fast: outcome(() => canonicalize(make())), careful: outcome(() => canonicalizeCarefully(make())) }).toEqual({
      fast: '[1,2]',
      careful: '[1,2]',
    });
  });
});
