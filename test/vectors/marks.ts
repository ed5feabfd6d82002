/**
 * The marks of a vector (docs/key-spec.md, "Test vectors"): which of the inputs' traits another
 * language has to take care over. Worked out from the inputs, never written by hand.
 */
import type { PayloadInput, TypedValue, Vector } from './inputs.js';

export const MARKS: Readonly<Record<string, string>> = {
  'binary-payload':
    'An argument arrives in a binary/plain (bytes) or binary/null (undefined) payload. Decide by the payload encoding: ' +
    "Python's SDK decodes binary/null to None, as it decodes the JSON null.",
  typed: 'The semantic arguments are what a TypeScript keyArgs returned, given as a typed value, not as payloads.',
  'typescript-only':
    'The typed value holds a Date, an array hole, extra array properties, or bytes or undefined inside an array or object: ' +
    'only a TypeScript keyArgs builds these (a payload carries bytes or undefined only as a whole argument).',
  'big-integer': 'A JSON integer beyond 2^53: it is read as the nearest IEEE double. Python\'s json module reads it as an exact int.',
  'negative-zero': 'A JSON number that reads as -0: it is written 0.',
  'number-form': 'A JSON number written otherwise than JavaScript writes it (1.0, 1E21, 100e-2): the canonical text rewrites it.',
  'out-of-range-number': 'A JSON number beyond the double range (read as Infinity: refused) or below it (read as 0).',
  'lone-surrogate':
    'A string (value, key or name) holding a UTF-16 surrogate without its pair. Python keeps it from a JSON escape; ' +
    "Go's encoding/json replaces it with U+FFFD, which gives another key.",
  'utf16-key-order':
    "Object keys whose UTF-16 order differs from their code point order (a character beyond U+FFFF beside one in U+E000..U+FFFF): Python's sorted() orders by code point.",
  'duplicate-key': 'A JSON object repeats a key: the last value counts, at the place of the first.',
  'deep-nesting': "Nested deeper than 500 levels. Python's json module raises RecursionError near 1,000.",
  'date-extended-year': "A Date outside years 1..9999, written with a six-digit signed year: Python's datetime cannot hold it.",
  refused: 'The canonical form refuses these arguments: no key exists for them.',
};

const DOUBLE_EXACT = 2 ** 53;

/** A vector before its marks and expected values are known. */
type Unmarked = Vector extends infer Each ? (Each extends Vector ? Omit<Each, 'marks' | 'expected'> : never) : never;

/** The marks that apply to this vector's inputs, in the order of MARKS. */
export function marksOf(vector: Unmarked): string[] {
  const found = new Set<string>();
  if (vector.kind === 'refusal') found.add('refused');
  else {
    const names: Array<string | undefined> = [vector.namespace, vector.activityType, ...(vector.kind === 'custom' ? [vector.customKey] : Object.values(vector.callSite))];
    for (const text of names) if (text !== undefined) noteString(text, found);
  }
  for (const payload of vector.args ?? []) notePayload(payload, found);
  if (vector.semanticArgs !== undefined) {
    found.add('typed');
    noteTyped(vector.semanticArgs, 0, found);
  }
  return Object.keys(MARKS).filter((mark) => found.has(mark));
}

function notePayload(payload: PayloadInput, found: Set<string>): void {
  if (payload.encoding === 'json/plain') noteJsonText(payload.data, found);
  else found.add('binary-payload');
}

function noteTyped(value: TypedValue, depth: number, found: Set<string>): void {
  if ('json' in value) return noteJsonText(value.json, found);
  if ('date' in value) {
    const year = value.date === null ? 2000 : new Date(value.date).getUTCFullYear();
    if (year < 1 || year > 9999) found.add('date-extended-year');
  }
  if (depth > 0 && ('undefined' in value || 'bytes' in value)) found.add('typescript-only');
  if ('date' in value) found.add('typescript-only');
  if ('array' in value) {
    if (value.properties !== undefined && value.properties.length > 0) found.add('typescript-only');
    for (const [name] of value.properties ?? []) noteString(name, found);
    for (const item of value.array) {
      if ('hole' in item) found.add('typescript-only');
      else noteTyped(item, depth + 1, found);
    }
  }
  if ('object' in value) {
    const names = value.object.map(([name]) => name);
    noteKeys(names, found);
    if (new Set(names).size < names.length) found.add('duplicate-key');
    for (const [, item] of value.object) noteTyped(item, depth + 1, found);
  }
}

function noteString(text: string, found: Set<string>): void {
  if (/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text)) found.add('lone-surrogate');
}

/** Keys whose sorted order by UTF-16 code units is not their order by code points. */
function noteKeys(keys: readonly string[], found: Set<string>): void {
  for (const key of keys) noteString(key, found);
  const byUnits = [...keys].sort();
  const byPoints = [...keys].sort((a, b) => comparePoints(a, b));
  if (byUnits.some((key, index) => key !== byPoints[index])) found.add('utf16-key-order');
}

function comparePoints(a: string, b: string): number {
  const pa = Array.from(a, (c) => c.codePointAt(0)!);
  const pb = Array.from(b, (c) => c.codePointAt(0)!);
  for (let index = 0; index < Math.min(pa.length, pb.length); index++) if (pa[index] !== pb[index]) return pa[index]! - pb[index]!;
  return pa.length - pb.length;
}

/**
 * Scans JSON text (already known to parse) for its numbers, strings, object keys and depth. A
 * scanner rather than JSON.parse, because a parsed value no longer shows a repeated key or how a
 * number was written.
 */
function noteJsonText(text: string, found: Set<string>): void {
  const objects: Array<string[] | null> = [];
  let expectKey = false;
  let depth = 0;
  const token = /\s+|"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|[{}[\],:]|true|false|null/gy;
  for (let match = token.exec(text); match !== null && match[0] !== ''; match = token.exec(text)) {
    const part = match[0];
    if (/^\s/.test(part)) continue;
    if (part === '{' || part === '[') {
      objects.push(part === '{' ? [] : null);
      expectKey = part === '{';
      depth = Math.max(depth, objects.length);
    } else if (part === '}' || part === ']') {
      const keys = objects.pop();
      if (keys) {
        noteKeys(keys, found);
        if (new Set(keys).size < keys.length) found.add('duplicate-key');
      }
      expectKey = false;
    } else if (part === ',') {
      expectKey = Array.isArray(objects[objects.length - 1]);
    } else if (part.startsWith('"')) {
      const value = JSON.parse(part) as string;
      noteString(value, found);
      if (expectKey) objects[objects.length - 1]!.push(value);
      expectKey = false;
    } else if (/^-?\d/.test(part)) {
      noteNumber(part, found);
    }
  }
  if (depth > 500) found.add('deep-nesting');
}

function noteNumber(text: string, found: Set<string>): void {
  const value = Number(text);
  if (!Number.isFinite(value) || (value === 0 && /[1-9]/.test(text.split(/[eE]/)[0]!))) found.add('out-of-range-number');
  if (Object.is(value, -0)) found.add('negative-zero');
  if (/^-?\d+$/.test(text) && Math.abs(Number(text)) > DOUBLE_EXACT) found.add('big-integer');
  if (Number.isFinite(value) && !Object.is(value, -0) && String(value) !== text) found.add('number-form');
}
