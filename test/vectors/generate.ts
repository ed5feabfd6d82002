/**
 * Writes test/vectors/keys.json, the test vectors of docs/key-spec.md, with this library's own
 * functions. Run once (`npx tsx test/vectors/generate.ts`); the file is then held fixed:
 * test/key/key-vectors.unit.test.ts checks the library and the Python reference against it and
 * never writes it. Generated values come from fast-check under a fixed seed, so a second run gives
 * the same file only with the same fast-check version: it refuses to overwrite the file unless
 * given `--overwrite`, and a changed expected value in the diff is a changed key.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import {
  InvalidKeyInputError,
  KEY_FORMAT_VERSION,
  KEY_UUID_NAMESPACE,
  KeySalt,
  callKeysOf,
  canonicalize,
  deriveCallKeys,
  keyToUuid,
  scopeMaterial,
} from '../../src/key/index.js';
import type { Scope } from '../../src/key/index.js';
import { MARKS, marksOf } from './marks.js';
import { semanticArgsOf } from './inputs.js';
import type { CallSiteInput, CallVector, CustomVector, PayloadInput, RefusalVector, TypedValue, Vector, VectorFile } from './inputs.js';

const OUT = new URL('./keys.json', import.meta.url);
const SEED = 20_240_524;
const GENERATED = 200;

/** The salt test/key/key.test.ts uses, as `migrate` keeps one (32 bytes); and the shortest and a long one. */
const SALT = '8f1c0b5e2d7a4c9b1e3f5a7c9d0b2e4f6a8c0e2b4d6f8a0c2e4b6d8f0a2c4e6b';
const SHORT_SALT = '000102030405060708090a0b0c0d0e0f';
/** Longer than SHA-256's 64-byte block: HMAC hashes such a salt first. */
const LONG_SALT = 'ff'.repeat(65);

// ---------------------------------------------------------------- JSON text, written as other SDKs write it

/** JSON as a syntax tree, so a text can repeat a key or write a number its own way. */
type Json =
  | { readonly t: 'literal'; readonly text: 'null' | 'true' | 'false' }
  | { readonly t: 'num'; readonly text: string }
  | { readonly t: 'str'; readonly v: string }
  | { readonly t: 'arr'; readonly items: readonly Json[] }
  | { readonly t: 'obj'; readonly entries: ReadonlyArray<readonly [string, Json]> };

/** ts: JSON.stringify. python: json.dumps defaults (", " and ": ", non-ASCII escaped). go: <, > and & escaped. */
type Style = 'ts' | 'python' | 'go' | 'slash' | 'pretty';

function jsonText(value: Json, style: Style, indent = ''): string {
  const comma = style === 'python' ? ', ' : ',';
  const colon = style === 'python' || style === 'pretty' ? ': ' : ':';
  const inner = `${indent}  `;
  const open = style === 'pretty' ? `\n${inner}` : '';
  const close = style === 'pretty' ? `\n${indent}` : '';
  const separator = style === 'pretty' ? `,\n${inner}` : comma;
  switch (value.t) {
    case 'literal':
    case 'num':
      return value.text;
    case 'str':
      return stringText(value.v, style);
    case 'arr':
      if (value.items.length === 0) return '[]';
      return `[${open}${value.items.map((item) => jsonText(item, style, inner)).join(separator)}${close}]`;
    case 'obj':
      if (value.entries.length === 0) return '{}';
      return `{${open}${value.entries.map(([key, item]) => `${stringText(key, style)}${colon}${jsonText(item, style, inner)}`).join(separator)}${close}}`;
  }
}

function stringText(text: string, style: Style): string {
  const written = JSON.stringify(text);
  const escape = (unit: string) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`;
  if (style === 'python') return written.replace(/[\u007f-\uffff]/g, escape);
  if (style === 'go') return written.replace(/[<>&\u2028\u2029]/g, escape);
  if (style === 'slash') return written.replace(/\//g, '\\/');
  return written;
}

// ---------------------------------------------------------------- generated values

const SPECIAL_KEYS = [
  '__proto__', 'constructor', 'prototype', 'toString', 'valueOf', 'hasOwnProperty', '__defineGetter__', 'length',
  '$', '$$', '$$$', '$x', '$bytes', '$date', '$undefined', '$$bytes', '$$undefined',
  '0', '1', '2', '9', '10', '01', '00', '007', '-0', '-1', '1.5', '1e3', ' 1', '4294967294', '4294967295', '4294967296', '9007199254740993',
  '', ' ', 'a b', 'A', 'a', 'Z', '_', '-', '\u00e9', 'e\u0301', '\uffff', '\ue000', '\ud83d\ude00', '\ud800', '\udfff', '"', '\\', '\n',
  '\u0000', '\u2028', '<script>', '\u00df', '\u1e9e', '\u0130',
];

const PIECES = [
  'a', 'Z', '0', ' ', '"', '\\', '/', '\b', '\f', '\n', '\r', '\t', '\u0000', '\u0001', '\u001f', '\u007f', '\u0080', '\u00e9', 'e\u0301',
  '\u2028', '\u2029', '\ufeff', '\ufffd', '\uffff', '\ue000', '\ud800', '\udbff', '\udc00', '\udfff', '\ud83d', '\ude00', '\ud83d\ude00',
  '\ud834\udd1e', '<', '>', '&', "'", '$', '\u4e2d\u6587', '\u03a9',
];

const NUMBER_TEXTS = [
  '0', '-0', '-0.0', '0.0', '0e0', '-0e-5', '1', '-1', '1.0', '1.50', '100e-2', '0.1', '0.2', '0.30000000000000004', '1e21', '1E21',
  '1e+21', '999999999999999999999', '1e20', '100000000000000000000', '123e18', '1e-6', '1e-7', '0.000001', '0.0000001', '1.5e-7',
  '9007199254740991', '9007199254740992', '9007199254740993', '-9007199254740993', '18446744073709551615', '18446744073709551616',
  '123456789012345678901234567890', '4294967295', '4294967296', '1.7976931348623157e308', '1.7976931348623158e308',
  '-1.7976931348623157E+308', '5e-324', '4.9406564584124654e-324', '2.4703282292062328e-324', '2.4703282292062327e-324',
  '2.2250738585072014e-308', '2.225073858507201e-308', '1e-400', '-1e-400', '3.141592653589793', '1e16', '1.2345678901234567e+89',
  '0.000123',
];

const finiteDouble = fc.double({ noNaN: true, noDefaultInfinity: true });

const numberText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...NUMBER_TEXTS),
  finiteDouble.map(String),
  finiteDouble.map((d) => d.toExponential()),
  finiteDouble.map((d) => d.toPrecision(17)),
  fc.integer().map(String),
  fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map(String),
  fc.integer({ min: -1_000_000, max: 1_000_000 }).map((n) => `${n}.0`),
);

const text: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 10 }),
  fc.string({ unit: 'binary', maxLength: 6 }),
  fc.string({ unit: 'grapheme', maxLength: 6 }),
  fc.array(fc.constantFrom(...PIECES), { maxLength: 6 }).map((pieces) => pieces.join('')),
);

const objectKey: fc.Arbitrary<string> = fc.oneof(fc.constantFrom(...SPECIAL_KEYS), text, fc.nat(20).map(String));

const leaf: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom('null', 'true', 'false').map((literal) => ({ t: 'literal', text: literal }) as const),
  numberText.map((number) => ({ t: 'num', text: number }) as const),
  text.map((v) => ({ t: 'str', v }) as const),
);

const { json } = fc.letrec<{ json: Json }>((tie) => ({
  json: fc.oneof(
    { depthSize: 'small', maxDepth: 4 },
    leaf,
    fc.array(tie('json'), { maxLength: 5 }).map((items) => ({ t: 'arr', items }) as const),
    fc
      .tuple(fc.array(fc.tuple(objectKey, tie('json')), { maxLength: 6 }), fc.nat(), fc.integer({ min: 0, max: 4 }), tie('json'))
      .map(([entries, pick, repeat, again]): Json => {
        // Now and then a repeated key, as JSON text can hold (JSON.parse keeps the last value).
        const repeated = repeat === 0 && entries.length > 0 ? [...entries, [entries[pick % entries.length]![0], again] as const] : entries;
        return { t: 'obj', entries: repeated };
      }),
  ),
}));

const payload: fc.Arbitrary<PayloadInput> = fc.oneof(
  { weight: 8, arbitrary: fc.tuple(json, fc.constantFrom<Style>('ts', 'ts', 'python', 'go', 'slash', 'pretty')).map(([value, style]) => jsonPayload(jsonText(value, style))) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 12 }).map((bytes) => ({ encoding: 'binary/plain', data: Buffer.from(bytes).toString('base64') }) as const) },
  { weight: 1, arbitrary: fc.constant({ encoding: 'binary/null' } as const) },
);

/** A name Temporal would accept and the worker would claim under: not empty, no U+0000 (Postgres text cannot hold it). */
const name = text.filter((candidate) => candidate !== '' && !candidate.includes('\u0000'));

const callSite: fc.Arbitrary<CallSiteInput> = fc.oneof(
  { weight: 7, arbitrary: fc.record({ workflowId: fc.oneof(name, fc.constantFrom('order-42', 'cron-nightly')), runId: fc.uuid(), activityId: fc.oneof(fc.nat(40).map(String), name) }) },
  { weight: 1, arbitrary: fc.record({ activityId: fc.oneof(name, fc.uuid()) }) },
);

const salt: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(SALT, SHORT_SALT, LONG_SALT),
  fc.uint8Array({ minLength: 32, maxLength: 32 }).map((bytes) => Buffer.from(bytes).toString('hex')),
  fc.uint8Array({ minLength: 16, maxLength: 80 }).map((bytes) => Buffer.from(bytes).toString('hex')),
);

const generatedCall = fc.record({
  salt,
  namespace: fc.oneof(fc.constantFrom('default', 'billing', 'prod-eu-1', '\u00fcn\u00efc\u00f8d\u00e9'), name),
  activityType: fc.oneof(fc.constantFrom('chargeCard', 'sendSms', 'placeCall', 'refund.v2'), name),
  scope: fc.constantFrom<Scope>('workflow', 'run', 'call'),
  callSite,
  args: fc.array(payload, { maxLength: 4 }),
});

// ---------------------------------------------------------------- hand-written cases

const jsonPayload = (data: string): PayloadInput => ({ encoding: 'json/plain', data });
const json1 = (data: string): readonly PayloadInput[] => [jsonPayload(data)];
const typedJson = (data: string): TypedValue => ({ json: data });
const deep = (levels: number, open: string, close: string, leafText: string) => open.repeat(levels) + leafText + close.repeat(levels);

/** Arguments alone: each under the default envelope below. */
const HAND_ARGS: Array<[string, readonly PayloadInput[]]> = [
  ['no arguments', []],
  ['the README example', json1('{"orderId":"o-42","amountCents":1999,"currency":"EUR"}')],
  ['keys in another order give the same text', json1('{"currency":"EUR","amountCents":1999,"orderId":"o-42"}')],
  ['two arguments', [jsonPayload('{"orderId":"o-42"}'), jsonPayload('1999')]],
  ['every JSON kind', json1('{"s":"x","n":1.5,"t":true,"f":false,"z":null,"a":[],"o":{}}')],
  ['whitespace around every token', json1(' \t\n\r{ "b" : [ 1 , 2 ] ,\n "a" : { } }\r\n ')],
  ['array-index keys first, numerically', json1('{"b":1,"10":2,"2":3,"a":4,"01":5}')],
  ['index keys up to 4294967294; 4294967295 is a name', json1('{"4294967296":1,"4294967295":2,"4294967294":3,"0":4,"-0":5,"00":6,"1e3":7," 1":8,"1.0":9}')],
  ['names by UTF-16 code units', json1('{"\\uffff":1,"\\ud83d\\ude00":2,"\\ue000":3,"a":4,"A":5,"_":6,"":7}')],
  ['names by UTF-16 code units, written raw', json1('{"\uffff":1,"\ud83d\ude00":2,"\ue000":3,"\u00e9":4,"\u{10ffff}":5}')],
  ['$ names escaped', json1('{"$":1,"$$":2,"$x":3,"x$":4,"#":5,"%":6}')],
  ['the tags as user data', json1('{"$bytes":"AQI=","$undefined":true,"$date":"2026-01-01T00:00:00.000Z","$$bytes":1}')],
  ['a tag as a whole argument, as data', json1('{"$undefined":true}')],
  ['__proto__ and other special names are data', json1('{"__proto__":{"admin":true},"constructor":{"prototype":1},"toString":2,"hasOwnProperty":3,"valueOf":4}')],
  ['a repeated key: the last value counts', json1('{"a":1,"b":2,"a":3}')],
  ['a repeated __proto__', json1('{"__proto__":1,"__proto__":{"x":2}}')],
  ['a repeated key, nested', json1('[{"k":{"x":1,"x":[2]},"k":{"y":3}}]')],
  ['-0 is 0', json1('[-0,-0.0,-0e5,0,0.0,0e-5]')],
  ['integers at and beyond 2^53', json1('[9007199254740991,9007199254740992,9007199254740993,-9007199254740993,18446744073709551616]')],
  ['a 300-digit integer', json1(`[${'9'.repeat(300)}]`)],
  ['exponent forms at 1e21', json1('[1e20,123e18,100000000000000000000,999999999999999999999,1e21,1E+21,1e+21]')],
  ['small numbers at 1e-6', json1('[0.000001,1e-6,0.0000001,1e-7,1.5e-7,0.000123]')],
  ['the double range', json1('[1.7976931348623157e308,1.7976931348623158e308,-1.7976931348623157E+308,5e-324,2.2250738585072014e-308]')],
  ['rounding at the smallest subnormal', json1('[4.9406564584124654e-324,2.4703282292062328e-324,2.4703282292062327e-324,1e-400,-1e-400]')],
  ['decimals that doubles cannot hold', json1('[0.1,0.2,0.30000000000000004,3.141592653589793,123456789.123456789]')],
  ['numbers written another way', json1('[1.0,1.50,100e-2,0.1e1,1E2,1e+2,-1.5E-3,2e0]')],
  ['Python writes floats with .0', json1('{"amount": 19.0, "count": 3.0, "ratio": 0.5}')],
  ['escapes in strings', json1('["\\"","\\\\","\\/","\\b","\\f","\\n","\\r","\\t","\\u0000","\\u001f","\\u007f","\\u0041"]')],
  ['control characters written as escapes', json1('"a\\u0001b\\u0002c\\u000bd\\u001be"')],
  ['U+2028 and U+2029 stay raw', json1('["\\u2028\\u2029","\u2028\u2029"]')],
  ['non-ASCII escaped as Python writes it', json1('"Jos\\u00e9 \\ud83d\\ude00 \\u4e2d"')],
  ['non-ASCII raw', json1('"Jos\u00e9 \ud83d\ude00 \u4e2d"')],
  ['HTML characters escaped as Go writes them', json1('"\\u003cb\\u003e \\u0026 \\u003c/b\\u003e"')],
  ['NFC and NFD are different strings (NFC)', json1('"Jos\u00e9"')],
  ['NFC and NFD are different strings (NFD)', json1('"Jose\u0301"')],
  ['a lone high surrogate', json1('"\\ud800"')],
  ['a lone low surrogate', json1('"\\udc00"')],
  ['surrogates in the wrong order', json1('"\\udc00\\ud800"')],
  ['a high surrogate before a letter, and one at the end', json1('["\\ud83dx","x\\ud83d"]')],
  ['a lone surrogate in a key', json1('{"\\ud800":1,"\\udbff\\udfff":2}')],
  ['the BOM and U+FFFF in a string', json1('"\\ufeff\\uffff\\ufffe"')],
  ['a long string', json1(JSON.stringify('0123456789abcdef'.repeat(512)))],
  ['nested 600 deep in arrays', json1(deep(600, '[', ']', '1'))],
  ['nested 600 deep in objects', json1(deep(600, '{"a":', '}', '"leaf"'))],
  ['nested 10,000 deep', json1(deep(5000, '[{"k":', '}]', 'null'))],
  ['bytes', [{ encoding: 'binary/plain', data: 'AQL/' }]],
  ['empty bytes', [{ encoding: 'binary/plain', data: '' }]],
  ['bytes beside JSON', [jsonPayload('"a"'), { encoding: 'binary/plain', data: 'AAECAwQFBgcICQ==' }]],
  ['a bytes argument is not its base64 string', json1('"AQL/"')],
  ['a bytes argument is not the $bytes tag as data', json1('{"$bytes":"AQL/"}')],
  ['a Uint8Array inside an argument arrives as JSON made of it', json1('{"data":{"0":1,"1":2,"2":255}}')],
  ['undefined', [{ encoding: 'binary/null' }]],
  ['null is not undefined', json1('null')],
  ['undefined between arguments', [jsonPayload('1'), { encoding: 'binary/null' }, jsonPayload('null')]],
  ['a Date inside an argument arrives as its string', json1('{"at":"2026-01-01T00:00:00.000Z"}')],
  ['a bare string', json1('"o-42"')],
  ['a bare number', json1('42')],
  ['booleans', [jsonPayload('true'), jsonPayload('false')]],
  ['empty containers', [jsonPayload('[]'), jsonPayload('{}'), jsonPayload('[[]]'), jsonPayload('[{}]'), jsonPayload('{"":{}}')]],
];

/** What a TypeScript keyArgs returned: values no payload carries, too. */
const HAND_TYPED: Array<[string, TypedValue]> = [
  ['keyArgs picks two fields', { array: [typedJson('"o-42"'), typedJson('1999')] }],
  ['keyArgs returns a bare string', typedJson('"o-42"')],
  ['keyArgs returns null', typedJson('null')],
  ['keyArgs returns bytes', { bytes: 'AQL/' }],
  ['keyArgs returns an object', { object: [['orderId', typedJson('"o-42"')], ['amountCents', typedJson('1999')]] }],
  ['keyArgs returns a Date', { date: 1_767_225_600_000 }],
  ['a Date at the epoch and before it', { array: [{ date: 0 }, { date: -1 }, { date: 1 }] }],
  ['dates with years beyond four digits', { array: [{ date: -62_198_755_200_000 }, { date: -62_135_596_800_001 }, { date: 253_402_300_799_999 }, { date: 253_402_300_800_000 }] }],
  ['the first and last Date', { array: [{ date: -8.64e15 }, { date: 8.64e15 }] }],
  ['bytes inside an object', { object: [['data', { bytes: 'AQL/' }], ['n', typedJson('1')]] }],
  ['undefined in an array', { array: [typedJson('1'), { undefined: true }, typedJson('null')] }],
  ['an undefined property counts as absent', { object: [['a', typedJson('1')], ['b', { undefined: true }]] }],
  ['holes count as undefined', { array: [{ hole: true }, typedJson('1'), { hole: true }] }],
  ['an array\'s other properties are not written', { array: [typedJson('1'), typedJson('2')], properties: [['extra', typedJson('3')], ['$x', typedJson('4')]] }],
  ['-0 from keyArgs', { array: [typedJson('-0'), { object: [['n', typedJson('-0')]] }] }],
  ['__proto__ built as an own property', { object: [['__proto__', { object: [['admin', typedJson('true')]] }], ['b', typedJson('2')]] }],
  ['a tagged name in a typed object', { object: [['$date', { date: 0 }], ['$bytes', { bytes: '' }]] }],
];

/** Custom keys (a `key()`): the envelope is the key's string, namespace and activity type; the arguments are fingerprinted. */
const HAND_CUSTOM: Array<[string, string, string, string, readonly PayloadInput[]]> = [
  ['a custom key', 'default', 'chargeCard', 'order:42', json1('{"orderId":"42","amountCents":1999}')],
  ['the same custom key under another activity type', 'default', 'refundCard', 'order:42', json1('{"orderId":"42","amountCents":1999}')],
  ['the same custom key in another namespace', 'billing', 'chargeCard', 'order:42', json1('{"orderId":"42","amountCents":1999}')],
  ['the same custom key with other arguments: same key, other fingerprint', 'default', 'chargeCard', 'order:42', json1('{"orderId":"42","amountCents":2000}')],
  ['a custom key that looks like JSON', 'default', 'sendSms', '{"to":"+4915112345678"}', json1('"+4915112345678"')],
  ['a custom key with quotes and backslashes', 'default', 'sendSms', 'a"b\\c', json1('1')],
  ['a custom key starting with $', 'default', 'sendSms', '$refund', json1('1')],
  ['a custom key with non-ASCII', '\u00fcn\u00efc\u00f8d\u00e9', 'placeCall', 'caf\u00e9 \ud83d\ude00', json1('1')],
  ['a custom key with a lone surrogate', 'default', 'placeCall', 'x\ud800y', json1('1')],
  ['a custom key with control characters', 'default', 'placeCall', 'line\nnext\ttab\u0001', json1('1')],
  ['a long custom key', 'default', 'placeCall', 'k'.repeat(5000), json1('1')],
  ['a custom key with no arguments', 'default', 'placeCall', 'nightly-2026-01-01', []],
  ['a custom key with bytes and undefined arguments', 'default', 'placeCall', 'blob:7', [{ encoding: 'binary/plain', data: 'AQL/' }, { encoding: 'binary/null' }]],
];

const HAND_REFUSALS: Array<[string, readonly PayloadInput[] | TypedValue]> = [
  ['a number beyond the double range reads as Infinity', json1('{"amount":1e400}')],
  ['a negative one as -Infinity', json1('[1,-1.8e308]')],
  ['an integer of 400 digits (a Python int, say)', [jsonPayload('1'), jsonPayload(`{"n":${'1'.repeat(400)}}`)]],
  ['named by position when the key is not an identifier', json1('{"first name":[0,{"x y":1e999}]}')],
  ['the first in canonical order is named', json1('{"b":1e400,"a":[2e400]}')],
  ['an invalid Date', { array: [typedJson('1'), { object: [['at', { date: null }]] }] }],
];

// ---------------------------------------------------------------- expected values, by the library

function callVector(name: string, inputs: Omit<CallVector, 'kind' | 'name' | 'marks' | 'expected'>): CallVector {
  const semanticArgs = semanticArgsOf({ name, marks: [], ...inputs });
  const canonicalArgs = canonicalize(semanticArgs, 'args');
  const material = scopeMaterial(inputs.scope, inputs.callSite);
  const keySalt = new KeySalt(Buffer.from(inputs.salt, 'hex'));
  const { key, fingerprint } = deriveCallKeys({ namespace: inputs.namespace, activityType: inputs.activityType, scopeMaterial: material, semanticArgs }, keySalt);
  const envelope = canonicalize({ v: KEY_FORMAT_VERSION, namespace: inputs.namespace, scopeMaterial: material, activityType: inputs.activityType, semanticArgs });
  assertHash(name, inputs.salt, 'key', envelope, key);
  assertHash(name, inputs.salt, 'fingerprint', canonicalArgs, fingerprint);
  assertDecodedAsParsed(name, inputs.args, canonicalArgs);
  const scopeText = canonicalize(material);
  const marks = marksOf({ name, kind: 'call', ...inputs });
  return { name, kind: 'call', marks, ...inputs, expected: { scopeMaterial: scopeText, canonicalArgs, envelope, key, fingerprint, uuid: keyToUuid(key) } };
}

function customVector(name: string, inputs: Omit<CustomVector, 'kind' | 'name' | 'marks' | 'expected'>): CustomVector {
  const semanticArgs = semanticArgsOf({ name, marks: [], ...inputs });
  const canonicalArgs = canonicalize(semanticArgs, 'args');
  const keySalt = new KeySalt(Buffer.from(inputs.salt, 'hex'));
  const { key, fingerprint } = callKeysOf({ namespace: inputs.namespace, activityType: inputs.activityType, customKey: inputs.customKey }, canonicalArgs, keySalt);
  const envelope = canonicalize({ v: KEY_FORMAT_VERSION, namespace: inputs.namespace, activityType: inputs.activityType, custom: inputs.customKey });
  assertHash(name, inputs.salt, 'key', envelope, key);
  assertHash(name, inputs.salt, 'fingerprint', canonicalArgs, fingerprint);
  const marks = marksOf({ name, kind: 'custom', ...inputs });
  return { name, kind: 'custom', marks, ...inputs, expected: { canonicalArgs, envelope, key, fingerprint, uuid: keyToUuid(key) } };
}

function refusalVector(name: string, inputs: { args: readonly PayloadInput[] } | { semanticArgs: TypedValue }): RefusalVector {
  let refused: { path: string; reason: string } | undefined;
  try {
    canonicalize(semanticArgsOf({ name, marks: [], ...inputs }), 'args');
  } catch (error) {
    if (!(error instanceof InvalidKeyInputError)) throw error;
    refused = { path: error.path, reason: error.reason };
  }
  if (refused === undefined) throw new Error(`refusal vector ${name}: the library accepted it`);
  const marks = marksOf({ name, kind: 'refusal', ...inputs });
  return { name, kind: 'refusal', marks, ...inputs, expected: { refused } };
}

/** The spec's formula gives the library's hash: the envelope text recorded is the one hashed. */
function assertHash(name: string, saltHex: string, purpose: 'key' | 'fingerprint', message: string, expected: string): void {
  const mac = createHmac('sha256', Buffer.from(saltHex, 'hex')).update(`${purpose}\u0000${message}`, 'utf8').digest('hex');
  if (mac !== expected) throw new Error(`vector ${name}: HMAC of the recorded ${purpose} text is not the library's ${purpose}`);
}

/** The SDK's converter and JSON.parse give the same value: the vectors describe JSON.parse, as the spec does. */
function assertDecodedAsParsed(name: string, args: readonly PayloadInput[] | undefined, canonicalArgs: string): void {
  if (args === undefined || args.some((arg) => arg.encoding !== 'json/plain')) return;
  const parsed = args.map((arg) => JSON.parse((arg as { data: string }).data) as unknown);
  if (canonicalize(parsed, 'args') !== canonicalArgs) throw new Error(`vector ${name}: the payload converter and JSON.parse disagree`);
}

function build(): VectorFile {
  const vectors: Vector[] = [];
  const envelope = { salt: SALT, namespace: 'default', activityType: 'chargeCard', scope: 'workflow' as Scope, callSite: { workflowId: 'order-42', runId: '7c0c5a3e-2b1d-4f5e-9a8b-1c2d3e4f5a6b', activityId: '1' } };
  for (const [name, args] of HAND_ARGS) vectors.push(callVector(name, { ...envelope, args }));
  for (const [name, semanticArgs] of HAND_TYPED) vectors.push(callVector(name, { ...envelope, semanticArgs }));

  const scopes: Array<[string, Scope, CallSiteInput]> = [
    ['workflow scope', 'workflow', envelope.callSite],
    ['run scope', 'run', envelope.callSite],
    ['call scope', 'call', envelope.callSite],
    ['a standalone activity, whatever the scope', 'call', { activityId: 'act-7' }],
    ['a standalone activity under workflow scope', 'workflow', { activityId: 'act-7' }],
    ['a workflow id with a quote and non-ASCII', 'workflow', { workflowId: 'order "42" \u00e9', runId: 'r', activityId: '1' }],
    ['a workflow id with a lone surrogate', 'workflow', { workflowId: 'w\udfff', runId: 'r', activityId: '1' }],
  ];
  const orderArgs = json1('{"orderId":"o-42","amountCents":1999,"currency":"EUR"}');
  for (const [name, scope, site] of scopes) vectors.push(callVector(name, { ...envelope, scope, callSite: site, args: orderArgs }));
  vectors.push(callVector('another namespace', { ...envelope, namespace: 'billing', args: orderArgs }));
  vectors.push(callVector('another activity type', { ...envelope, activityType: 'refundCard', args: orderArgs }));
  vectors.push(callVector('an activity type with a quote and a lone surrogate', { ...envelope, activityType: 'a"\ud800', args: orderArgs }));
  vectors.push(callVector('the shortest salt', { ...envelope, salt: SHORT_SALT, args: orderArgs }));
  vectors.push(callVector('a salt longer than a SHA-256 block', { ...envelope, salt: LONG_SALT, args: orderArgs }));

  for (const [name, namespace, activityType, customKey, args] of HAND_CUSTOM) vectors.push(customVector(name, { salt: SALT, namespace, activityType, customKey, args }));
  vectors.push(customVector('a custom key under the shortest salt', { salt: SHORT_SALT, namespace: 'default', activityType: 'chargeCard', customKey: 'order:42', args: orderArgs }));
  vectors.push(customVector('a custom key beside typed arguments', { salt: SALT, namespace: 'default', activityType: 'chargeCard', customKey: 'order:42', semanticArgs: { array: [{ date: 0 }, { undefined: true }] } }));

  for (const [name, inputs] of HAND_REFUSALS) vectors.push(refusalVector(name, Array.isArray(inputs) ? { args: inputs as readonly PayloadInput[] } : { semanticArgs: inputs as TypedValue }));

  fc.sample(generatedCall, { seed: SEED, numRuns: GENERATED }).forEach((inputs, index) => {
    vectors.push(callVector(`generated ${String(index + 1).padStart(3, '0')}`, inputs));
  });

  const names = new Set(vectors.map((vector) => vector.name));
  if (names.size !== vectors.length) throw new Error('two vectors share a name');
  return {
    description:
      'Test vectors of the temporal-idempotency key, format 1. Held fixed: an implementation of docs/key-spec.md computes every ' +
      'expected value from the inputs. Strings here are JSON strings: a lone surrogate is written as its \\u escape.',
    spec: 'docs/key-spec.md',
    keyFormatVersion: KEY_FORMAT_VERSION,
    uuidNamespace: KEY_UUID_NAMESPACE,
    generator: { script: 'test/vectors/generate.ts', seed: SEED, fastCheck: '4.11.0' },
    marks: MARKS,
    vectors,
  };
}

if (existsSync(OUT) && !process.argv.includes('--overwrite')) {
  console.error(`${OUT.pathname} exists and is held fixed (its keys are the spec's). Pass --overwrite to write it again on purpose.`);
  process.exit(1);
}
const file = build();
writeFileSync(OUT, `${JSON.stringify(file, null, 1)}\n`);
console.log(`wrote ${file.vectors.length} vectors to ${OUT.pathname}`);
