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

/** The canonical text of `value`; errors name the bad value's path from `rootPath`. */
export function canonicalize(value: unknown, rootPath = 'value'): string {
  return new CanonicalWriter().write(value, rootPath);
}

/**
 * Each container is checked against its ancestors as it opens, so a cycle is refused where it first
 * closes (following it further would write every sibling before it again at each turn: a worker out of
 * memory). Above this depth the ancestors are compared one by one (a few, for most arguments: cheaper
 * than a set); from it on, they are kept in a set.
 */
const ANCESTOR_SET_DEPTH = 32;

/** An object's keys in canonical order, with their text, for the last object of that shape at a depth. */
interface KeyOrder {
  readonly keys: readonly string[];
  readonly sorted: readonly string[];
  /** `"key":` for the first key written, `,"key":` for the others. */
  readonly firstTexts: readonly string[];
  readonly nextTexts: readonly string[];
}

/**
 * A container being written: an array by index, or a record by its keys in canonical order. Frames are
 * kept by depth and reused, so a value of many small objects does not allocate one for each.
 */
interface Frame {
  container: object;
  /** How its parent reached it: an index, or a key; undefined for the root. */
  step: string | number | undefined;
  items: readonly unknown[] | undefined;
  record: Record<string, unknown> | undefined;
  order: KeyOrder | undefined;
  /** The next child to write. */
  next: number;
  /** Whether a child was written yet (a record leaves out undefined values). */
  wrote: boolean;
}

/**
 * One writer, iterative: a stack of containers instead of the call stack, so arguments nested deeper
 * than the call stack allows still get a key instead of a `RangeError`; strings of no escapes written as
 * they are, and the key order of objects of one shape worked out once per depth, so that large arguments
 * cost a few times `JSON.stringify`, not ten.
 */
class CanonicalWriter {
  /** Frames by depth; those from `depth` on are free to reuse. */
  private readonly frames: Frame[] = [];
  private depth = 0;
  /** By depth: objects in one array mostly share their keys, so their order is worked out once. */
  private readonly lastOrder: Array<KeyOrder | undefined> = [];
  /** The containers on the stack, kept only while it is at least ANCESTOR_SET_DEPTH deep. */
  private ancestors: Set<object> | undefined;
  private rootPath = 'value';

  write(value: unknown, rootPath: string): string {
    this.rootPath = rootPath;
    try {
      return this.writeAll(value);
    } catch (error) {
      if (error instanceof InvalidKeyInputError) throw error;
      // Only a keyArgs or key() can hand over a value that throws when read (a getter, a proxy), or one
      // whose text outgrows a string: still a bad input, named where it was being read.
      const name = error instanceof Error ? error.name : typeof error;
      const message = error instanceof Error ? error.message : String(error);
      throw this.invalid(undefined, `reading it threw ${name}: ${message}`);
    }
  }

  private writeAll(value: unknown): string {
    let text = '';
    let current = value;
    let step: string | number | undefined;
    for (;;) {
      // Write `current`, the child `step` of the top frame (or the root).
      if (typeof current === 'object' && current !== null) {
        const opened = this.open(current, step);
        if (opened === undefined) text += this.leafObjectText(current, step);
        else text += opened;
      } else {
        text += this.primitiveText(current, step);
      }
      // Then the next child of the innermost container that has one, closing those that are done.
      for (;;) {
        if (this.depth === 0) return text;
        const frame = this.frames[this.depth - 1]!;
        let found = false;
        if (frame.items !== undefined) {
          const { items } = frame;
          while (frame.next < items.length) {
            const index = frame.next++;
            const item = items[index];
            if (index > 0) text += ',';
            // Plain values are written here, without a turn of the outer loop: most children are.
            if (typeof item !== 'object' || item === null) {
              text += this.primitiveText(item, index);
              continue;
            }
            step = index;
            current = item;
            found = true;
            break;
          }
          if (!found) text += ']';
        } else {
          const { sorted, firstTexts, nextTexts } = frame.order!;
          const record = frame.record!;
          while (frame.next < sorted.length) {
            const index = frame.next++;
            const key = sorted[index]!;
            const item = record[key];
            // An undefined property and an absent one reach the activity identically through JSON.
            if (item === undefined) continue;
            text += (frame.wrote ? nextTexts : firstTexts)[index]!;
            frame.wrote = true;
            if (typeof item !== 'object' || item === null) {
              text += this.primitiveText(item, key);
              continue;
            }
            step = key;
            current = item;
            found = true;
            break;
          }
          if (!found) text += '}';
        }
        if (found) break;
        this.close();
      }
    }
  }

  private primitiveText(value: unknown, step: string | number | undefined): string {
    switch (typeof value) {
      case 'string':
        return NO_ESCAPES.test(value) ? `"${value}"` : JSON.stringify(value);
      case 'boolean':
        return value ? 'true' : 'false';
      case 'number':
        if (!Number.isFinite(value)) throw this.invalid(step, `${value} is not a finite number and has no stable form`);
        // -0 and 0 arrive as the same JSON number at the activity, so they are one value. A finite number's
        // text is String()'s, as JSON.stringify writes it.
        return value === 0 ? '0' : `${value}`;
      case 'undefined':
        return '{"$undefined":true}';
      case 'bigint':
        throw this.invalid(step, 'a BigInt cannot be carried by the JSON payload converter; pass it as a string');
      case 'symbol':
        throw this.invalid(step, 'a symbol has no serializable value');
      case 'function':
        throw this.invalid(step, 'a function has no serializable value');
      default:
        // null
        return 'null';
    }
  }

  /** Bytes and dates, written whole; anything else that is not plain data is refused. */
  private leafObjectText(value: object, step: string | number | undefined): string {
    if (isBytes(value)) return bytesText(value);
    if (isDate(value)) {
      if (Number.isNaN(value.getTime())) throw this.invalid(step, 'an invalid Date has no stable form');
      return dateText(value);
    }
    const name = (value as { constructor?: { name?: string } }).constructor?.name ?? 'unknown';
    throw this.invalid(
      step,
      `an instance of ${name} is not plain data and the payload converter would not carry it faithfully; pass a plain object`,
    );
  }

  /** Pushes an array or a plain record and returns its opening text; undefined for any other object. */
  private open(value: object, step: string | number | undefined): string | undefined {
    // An array is its elements, whatever its prototype (a subclass's, another realm's); an index loop,
    // because a hole must count as undefined, as JSON carries it.
    const isArray = Array.isArray(value);
    if (!isArray && !isPlainObject(value)) return undefined;
    const depth = this.depth;
    const items = isArray ? (value as unknown[]) : undefined;
    const record = isArray ? undefined : (value as Record<string, unknown>);
    const order = isArray ? undefined : this.orderOf(Object.keys(value), depth);
    const frame = this.frames[depth];
    if (frame === undefined) this.frames.push({ container: value, step, items, record, order, next: 0, wrote: false });
    else {
      frame.container = value;
      frame.step = step;
      frame.items = items;
      frame.record = record;
      frame.order = order;
      frame.next = 0;
      frame.wrote = false;
    }
    if (this.ancestors !== undefined) {
      if (this.ancestors.has(value)) throw this.cycleAt(depth);
      this.ancestors.add(value);
    } else {
      for (let index = 0; index < depth; index++) if (this.frames[index]!.container === value) throw this.cycleAt(depth);
      if (depth + 1 === ANCESTOR_SET_DEPTH) this.ancestors = new Set(this.frames.slice(0, depth + 1).map((each) => each.container));
    }
    this.depth++;
    return isArray ? '[' : '{';
  }

  private close(): void {
    const frame = this.frames[--this.depth]!;
    if (this.ancestors === undefined) return;
    if (this.depth < ANCESTOR_SET_DEPTH) this.ancestors = undefined;
    else this.ancestors.delete(frame.container);
  }

  private cycleAt(index: number): InvalidKeyInputError {
    this.depth = index;
    const { step } = this.frames[index]!;
    return this.invalid(step, 'the value contains a cycle (it refers back to one of its own parents)');
  }

  private orderOf(keys: readonly string[], depth: number): KeyOrder {
    const last = this.lastOrder[depth];
    if (last && sameKeys(last.keys, keys)) return last;
    const sorted = sortedKeys([...keys]);
    const firstTexts = sorted.map((key) => `${keyText(key)}:`);
    const order = { keys, sorted, firstTexts, nextTexts: firstTexts.map((text) => `,${text}`) };
    this.lastOrder[depth] = order;
    return order;
  }

  /**
   * The error for the child `step` of the top frame (the root, with the stack empty), its path as code
   * names it: `args[1].to`. A key that is not an identifier (`"+4915112345678"`) is data rather than a
   * field name, and the path goes into messages, history and logs: it is shown by its place among its
   * object's keys in canonical order, undefined values left out, instead: `args[0][key #2]`.
   */
  private invalid(step: string | number | undefined, reason: string): InvalidKeyInputError {
    let text = this.rootPath;
    const steps: Array<{ readonly step: string | number; readonly parent: Frame }> = [];
    for (let index = 1; index < this.depth; index++) steps.push({ step: this.frames[index]!.step!, parent: this.frames[index - 1]! });
    if (step !== undefined && this.depth > 0) steps.push({ step, parent: this.frames[this.depth - 1]! });
    for (const { step: each, parent } of steps) {
      if (typeof each === 'number') text += `[${each}]`;
      else text += IDENTIFIER.test(each) ? `.${each}` : `[key #${keyPosition(parent, each)}]`;
    }
    return new InvalidKeyInputError(text, reason);
  }
}

/** The place (from 1) of `key` among the record's keys with a value, in canonical order. */
function keyPosition(frame: Frame, key: string): number {
  let position = 0;
  for (const each of frame.order!.sorted) {
    if (frame.record![each] !== undefined) position++;
    if (each === key) return position;
  }
  return position;
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

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
