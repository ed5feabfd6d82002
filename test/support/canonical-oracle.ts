/**
 * The test oracle of the canonical form: the careful writer src/key/canonical.ts had beside its fast
 * one until they were made one (1.0). It writes each value as a queue of work, with a path object per
 * value and a cycle check per container: slow, and plain to read. The one writer in src must write
 * the same text, and refuse the same values naming the same path, for every value fast-check makes
 * (test/key/canonical-writers.test.ts). Its own rules are those of docs/key-spec.md.
 */
import { types } from 'node:util';
import { InvalidKeyInputError } from '../../src/key/errors.js';

/** The canonical text of `value`, by the careful writer; errors name the bad value's path from `rootPath`. */
export function canonicalizeCarefully(value: unknown, rootPath = 'value'): string {
  return new CanonicalWriter().write(value, rootPath);
}

function bytesText(bytes: Uint8Array): string {
  return `{"$bytes":"${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64')}"}`;
}

function dateText(date: Date): string {
  return `{"$date":"${date.toISOString()}"}`;
}

const PLAIN_KEY = /^[A-Za-z0-9_\-]*$/;

/** A key as the canonical text writes it: `$`-keys escaped, quoted as JSON. */
function keyText(key: string): string {
  if (PLAIN_KEY.test(key)) return `"${key}"`;
  return JSON.stringify(key.startsWith('$') ? `$${key}` : key);
}

/** Where a value sits, built only when an error needs to name it. */
interface Path {
  readonly parent: Path | string;
  readonly step: string | number;
  /** For an object key: its place (from 1) among the object's keys in canonical order. */
  readonly position?: number;
}

interface PendingValue {
  readonly value: unknown;
  readonly path: Path | string;
}

/** Marks where a container's children end, so it stops counting as an ancestor (cycle detection). */
interface Leave {
  readonly leave: object;
}

/** Literal text, a value still to write, or the end of a container. */
type Work = string | PendingValue | Leave;

class CanonicalWriter {
  private readonly out: string[] = [];
  private readonly work: Work[] = [];
  private readonly ancestors = new Set<object>();

  write(value: unknown, rootPath: string): string {
    this.work.push({ value, path: rootPath });
    for (let item = this.work.pop(); item !== undefined; item = this.work.pop()) {
      if (typeof item === 'string') this.out.push(item);
      else if ('leave' in item) this.ancestors.delete(item.leave);
      else this.writeValue(item.value, item.path);
    }
    return this.out.join('');
  }

  private writeValue(value: unknown, path: Path | string): void {
    switch (typeof value) {
      case 'string':
        return void this.out.push(JSON.stringify(value));
      case 'boolean':
        return void this.out.push(value ? 'true' : 'false');
      case 'number':
        if (!Number.isFinite(value)) {
          throw invalid(path, `${value} is not a finite number and has no stable form`);
        }
        // -0 and 0 arrive as the same JSON number at the activity, so they are one value.
        return void this.out.push(value === 0 ? '0' : JSON.stringify(value));
      case 'undefined':
        return void this.out.push('{"$undefined":true}');
      case 'bigint':
        throw invalid(path, 'a BigInt cannot be carried by the JSON payload converter; pass it as a string');
      case 'symbol':
        throw invalid(path, 'a symbol has no serializable value');
      case 'function':
        throw invalid(path, 'a function has no serializable value');
      case 'object':
        return value === null ? void this.out.push('null') : this.writeObject(value, path);
      default:
        throw invalid(path, `values of type ${typeof value} are not supported`);
    }
  }

  private writeObject(value: object, path: Path | string): void {
    if (this.ancestors.has(value)) {
      throw invalid(path, 'the value contains a cycle (it refers back to one of its own parents)');
    }
    // An array is its elements, whatever its prototype (a subclass's, another realm's), as the fast writer has it.
    if (Array.isArray(value)) return this.openArray(value, path);
    if (isBytes(value)) return void this.out.push(bytesText(value));
    if (isDate(value)) {
      if (Number.isNaN(value.getTime())) throw invalid(path, 'an invalid Date has no stable form');
      return void this.out.push(dateText(value));
    }
    if (!isPlainObject(value)) {
      const name = (value as { constructor?: { name?: string } }).constructor?.name ?? 'unknown';
      throw invalid(
        path,
        `an instance of ${name} is not plain data and the payload converter would not carry it faithfully; pass a plain object`,
      );
    }
    this.openRecord(value as Record<string, unknown>, path);
  }

  /** Queues the elements; an index loop, because a hole must count as undefined, as JSON carries it. */
  private openArray(items: readonly unknown[], path: Path | string): void {
    this.ancestors.add(items);
    this.out.push('[');
    this.work.push(']', { leave: items });
    for (let index = items.length - 1; index >= 0; index--) {
      this.work.push({ value: items[index], path: { parent: path, step: index } });
      if (index > 0) this.work.push(',');
    }
  }

  private openRecord(record: Record<string, unknown>, path: Path | string): void {
    // An undefined property and an absent one reach the activity identically through JSON.
    const keys = sortedKeys(Object.keys(record).filter((key) => record[key] !== undefined));
    this.ancestors.add(record);
    this.out.push('{');
    this.work.push('}', { leave: record });
    for (let index = keys.length - 1; index >= 0; index--) {
      const key = keys[index]!;
      this.work.push({ value: record[key], path: { parent: path, step: key, position: index + 1 } });
      this.work.push(`${index > 0 ? ',' : ''}${keyText(key)}:`);
    }
  }
}

/**
 * Array-index keys (`"0"`, `"10"`) first, in numeric order, then the rest by UTF-16 code units
 * (the same order in every engine, unlike localeCompare): the order a JavaScript object gives
 * its own keys, which the first writer of this form went through.
 */
function sortedKeys(keys: string[]): string[] {
  const indexKeys: string[] = [];
  const otherKeys: string[] = [];
  for (const key of keys) (isArrayIndex(key) ? indexKeys : otherKeys).push(key);
  indexKeys.sort((a, b) => Number(a) - Number(b));
  return indexKeys.length === 0 ? otherKeys.sort() : [...indexKeys, ...otherKeys.sort()];
}

const MAX_ARRAY_INDEX = 2 ** 32 - 2;

function isArrayIndex(key: string): boolean {
  const code = key.charCodeAt(0);
  if (!(code >= 48 && code <= 57)) return false; // fast path: most keys do not start with a digit
  const number = Number(key);
  return Number.isInteger(number) && number <= MAX_ARRAY_INDEX && String(number) === key;
}

/**
 * Bytes and dates by what they are and by their prototype, both: `Object.create(Date.prototype)` has
 * no date inside (its methods would throw), and a real date with a swapped prototype is not one a
 * converter would write as a date.
 */
function isBytes(value: object): value is Uint8Array {
  return value instanceof Uint8Array && types.isUint8Array(value);
}

function isDate(value: object): value is Date {
  return value instanceof Date && types.isDate(value);
}

/**
 * Plain by its prototype and by what it is: a typed array or a date whose prototype was swapped for
 * a plain one keeps its internal data, which a record's own keys do not show (bytes [1] would be
 * written as {"0":1}, a date as {}), so two different values would share a key.
 */
function isPlainObject(value: object): boolean {
  const prototype: unknown = Object.getPrototypeOf(value);
  return (prototype === null || prototype === Object.prototype) && !hasInternalData(value);
}

function hasInternalData(value: object): boolean {
  return (
    types.isArrayBufferView(value) ||
    types.isAnyArrayBuffer(value) ||
    types.isDate(value) ||
    types.isMap(value) ||
    types.isSet(value) ||
    types.isBoxedPrimitive(value) ||
    types.isRegExp(value) ||
    types.isWeakMap(value) ||
    types.isWeakSet(value) ||
    types.isPromise(value)
  );
}

function invalid(path: Path | string, reason: string): InvalidKeyInputError {
  return new InvalidKeyInputError(pathText(path), reason);
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/**
 * The path as code names it: `args[1].to`. A key that is not an identifier (`"+4915112345678"`) is
 * data rather than a field name, and the path goes into messages, history and logs: it is shown
 * by its position among its object's keys instead, `args[0][key #2]`.
 */
function pathText(path: Path | string): string {
  const steps: Array<Path> = [];
  let node: Path | string = path;
  for (; typeof node !== 'string'; node = node.parent) steps.push(node);
  let text = node;
  for (let index = steps.length - 1; index >= 0; index--) {
    const { step } = steps[index]!;
    if (typeof step === 'number') text += `[${step}]`;
    else text += IDENTIFIER.test(step) ? `.${step}` : `[key #${steps[index]!.position ?? '?'}]`;
  }
  return text;
}
