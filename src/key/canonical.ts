/**
 * Deterministic text form of activity arguments, the input to the key hash.
 *
 * JSON with object keys sorted, plus tags for the few values JSON cannot tell
 * apart. Tags are objects with a single `$`-prefixed key; a user's own keys
 * that start with `$` are escaped by doubling the `$`, so no plain object can
 * ever produce the same text as a tagged value.
 *
 * Changing anything here changes keys, and old claims stop matching: bump
 * KEY_FORMAT_VERSION in key.ts and treat it as a breaking change.
 */
import { InvalidKeyInputError } from './errors.js';

export type Canonical = null | boolean | number | string | Canonical[] | { [key: string]: Canonical };

/** The canonical text of `value`; errors name the bad value's path from `rootPath`. */
export function canonicalize(value: unknown, rootPath = 'value'): string {
  return JSON.stringify(canonicalTree(value, rootPath));
}

/** The canonical tree of `value`: plain JSON data whose `JSON.stringify` is the canonical text. */
export function canonicalTree(value: unknown, rootPath = 'value'): Canonical {
  return toCanonical(value, rootPath, new Set());
}

function toCanonical(value: unknown, path: string, ancestors: Set<object>): Canonical {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      if (!Number.isFinite(value)) {
        throw new InvalidKeyInputError(path, `${value} is not a finite number and has no stable form`);
      }
      // -0 and 0 arrive as the same JSON number at the activity, so they are one value.
      return value === 0 ? 0 : value;
    case 'undefined':
      return { $undefined: true };
    case 'bigint':
      throw new InvalidKeyInputError(path, 'a BigInt cannot be carried by the JSON payload converter; pass it as a string');
    case 'symbol':
      throw new InvalidKeyInputError(path, 'a symbol has no serializable value');
    case 'function':
      throw new InvalidKeyInputError(path, 'a function has no serializable value');
    case 'object':
      return value === null ? null : objectToCanonical(value, path, ancestors);
    default:
      throw new InvalidKeyInputError(path, `values of type ${typeof value} are not supported`);
  }
}

function objectToCanonical(value: object, path: string, ancestors: Set<object>): Canonical {
  if (ancestors.has(value)) {
    throw new InvalidKeyInputError(path, 'the value contains a cycle (it refers back to one of its own parents)');
  }
  if (value instanceof Uint8Array) {
    return { $bytes: Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64') };
  }
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw new InvalidKeyInputError(path, 'an invalid Date has no stable form');
    return { $date: value.toISOString() };
  }
  ancestors.add(value);
  try {
    if (Array.isArray(value)) return arrayToCanonical(value, path, ancestors);
    if (!isPlainObject(value)) {
      const name = value.constructor?.name ?? 'unknown';
      throw new InvalidKeyInputError(
        path,
        `an instance of ${name} is not plain data and the payload converter would not carry it faithfully; pass a plain object`,
      );
    }
    return plainObjectToCanonical(value as Record<string, unknown>, path, ancestors);
  } finally {
    ancestors.delete(value);
  }
}

function arrayToCanonical(items: readonly unknown[], path: string, ancestors: Set<object>): Canonical[] {
  const result: Canonical[] = [];
  // An index loop, not map(): map() skips holes, and a hole must count as undefined.
  for (let index = 0; index < items.length; index++) {
    result.push(toCanonical(items[index], `${path}[${index}]`, ancestors));
  }
  return result;
}

function plainObjectToCanonical(
  record: Record<string, unknown>,
  path: string,
  ancestors: Set<object>,
): { [key: string]: Canonical } {
  const result: { [key: string]: Canonical } = {};
  // Sort by UTF-16 code units: the same order in every JavaScript engine, unlike localeCompare.
  for (const key of Object.keys(record).sort()) {
    const child = record[key];
    // An undefined property and an absent one reach the activity identically through JSON.
    if (child === undefined) continue;
    const escapedKey = key.startsWith('$') ? `$${key}` : key;
    result[escapedKey] = toCanonical(child, childPath(path, key), ancestors);
  }
  return result;
}

function isPlainObject(value: object): boolean {
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === null || prototype === Object.prototype;
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function childPath(path: string, key: string): string {
  return IDENTIFIER.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}
