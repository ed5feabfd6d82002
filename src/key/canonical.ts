/**
 * Deterministic text form of activity arguments, the input to the key hash.
 *
 * JSON with object keys sorted, plus tags for the few values JSON cannot tell
 * apart. Tags are objects with a single `$`-prefixed key; a user's own keys
 * that start with `$` are escaped by doubling the `$`, so no plain object can
 * ever produce the same text as a tagged value.
 *
 * The text is written directly, never through an intermediate object: a key
 * such as `__proto__` (which `JSON.parse` creates as an own property) is data
 * here, not a prototype. The walk is iterative, so arguments nested deeper
 * than the call stack allows still get a key instead of a `RangeError`.
 *
 * Changing anything here changes keys, and old claims stop matching: bump
 * KEY_FORMAT_VERSION in key.ts and treat it as a breaking change.
 */
import { types } from 'node:util';
import { InvalidKeyInputError } from './errors.js';

export type Canonical = null | boolean | number | string | Canonical[] | { [key: string]: Canonical };

/** The canonical text of `value`; errors name the bad value's path from `rootPath`. */
export function canonicalize(value: unknown, rootPath = 'value'): string {
  // The fast writer gives up on anything unusual (a bad value, a cycle, deep nesting); the careful
  // one then writes it, or names the bad value's path. Both write the same text.
  return fastCanonicalText(value) ?? new CanonicalWriter().write(value, rootPath);
}

/** The canonical text by the careful writer alone: for tests that hold the fast one to it. */
export function canonicalizeCarefully(value: unknown, rootPath = 'value'): string {
  return new CanonicalWriter().write(value, rootPath);
}

/** The canonical tree of `value`: plain JSON data whose `JSON.stringify` is the canonical text. */
export function canonicalTree(value: unknown, rootPath = 'value'): Canonical {
  return JSON.parse(canonicalize(value, rootPath)) as Canonical;
}

/** Deeper than this, the fast writer hands over to the iterative one (it also ends a cycle). */
const FAST_MAX_DEPTH = 500;

/** Thrown inside the fast writer to hand the value over to the careful one. */
const GIVE_UP: unique symbol = Symbol('give up');

/**
 * The canonical text, written recursively with no path bookkeeping and no cycle set: what almost
 * every call takes. Undefined when the value needs the careful writer.
 */
function fastCanonicalText(value: unknown): string | undefined {
  const writer = new FastWriter();
  try {
    return writer.write(value, 0, '');
  } catch (error) {
    if (error === GIVE_UP) return undefined;
    throw error;
  }
}

/** An object's keys in canonical order, with their text, for the last object of that shape at a depth. */
interface KeyOrder {
  readonly keys: readonly string[];
  readonly sorted: readonly string[];
  /** `"key":` for the first key written, `,"key":` for the others. */
  readonly firstTexts: readonly string[];
  readonly nextTexts: readonly string[];
}

class FastWriter {
  /** By depth: objects in one array mostly share their keys, so their order is worked out once. */
  private readonly lastOrder: Array<KeyOrder | undefined> = [];

  /** `text` with the value's canonical text appended. */
  write(value: unknown, depth: number, text: string): string {
    switch (typeof value) {
      case 'string':
        return text + (NO_ESCAPES.test(value) ? `"${value}"` : JSON.stringify(value));
      case 'number':
        if (!Number.isFinite(value)) throw GIVE_UP;
        // JSON.stringify writes a finite number as String() does; -0 is 0, as in the careful writer.
        return text + (value === 0 ? '0' : `${value}`);
      case 'boolean':
        return text + (value ? 'true' : 'false');
      case 'undefined':
        return text + '{"$undefined":true}';
      case 'object':
        if (value === null) return text + 'null';
        if (depth >= FAST_MAX_DEPTH) throw GIVE_UP;
        if (Array.isArray(value)) return this.writeArray(value, depth, text);
        if (isPlainObject(value)) return this.writeRecord(value as Record<string, unknown>, depth, text);
        if (isBytes(value)) return text + bytesText(value);
        if (isDate(value) && !Number.isNaN(value.getTime())) return text + dateText(value);
        throw GIVE_UP;
      default:
        throw GIVE_UP;
    }
  }

  private writeArray(items: readonly unknown[], depth: number, text: string): string {
    if (items.length === 0) return text + '[]';
    text = this.write(items[0], depth + 1, text + '[');
    for (let index = 1; index < items.length; index++) text = this.write(items[index], depth + 1, text + ',');
    return text + ']';
  }

  private writeRecord(record: Record<string, unknown>, depth: number, text: string): string {
    const order = this.orderOf(Object.keys(record), depth);
    const { sorted } = order;
    let texts = order.firstTexts;
    text += '{';
    for (let index = 0; index < sorted.length; index++) {
      const item = record[sorted[index]!];
      if (item === undefined) continue;
      text = this.write(item, depth + 1, text + texts[index]!);
      texts = order.nextTexts;
    }
    return text + '}';
  }

  private orderOf(keys: readonly string[], depth: number): KeyOrder {
    const last = this.lastOrder[depth];
    if (last && sameKeys(last.keys, keys)) return last;
    const sorted = sortedKeys([...keys]);
    const firstTexts = sorted.map((key) => `${keyText(key)}:`);
    const order = { keys, sorted, firstTexts, nextTexts: firstTexts.map((keyText) => `,${keyText}`) };
    this.lastOrder[depth] = order;
    return order;
  }
}

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let index = 0; index < a.length; index++) if (a[index] !== b[index]) return false;
  return true;
}

function bytesText(bytes: Uint8Array): string {
  return `{"$bytes":"${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64')}"}`;
}

function dateText(date: Date): string {
  return `{"$date":"${date.toISOString()}"}`;
}

/**
 * A string JSON.stringify would write as it is, between quotes: no quote, backslash, control
 * character or surrogate (any surrogate goes to JSON.stringify, which escapes a lone one). Testing
 * this is cheaper than calling JSON.stringify on each of many short strings.
 */
const NO_ESCAPES = /^[^"\\\u0000-\u001f\ud800-\udfff]*$/;

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
