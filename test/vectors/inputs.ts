/**
 * The shape of test/vectors/keys.json (docs/key-spec.md, "Test vectors"), and how a vector's inputs
 * become the values the library canonicalizes: payloads through Temporal's own default payload
 * converter, typed values as a TypeScript `keyArgs` would build them. Shared by the generator and
 * the test, so both read the inputs alike.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import type { Payload } from '@temporalio/common';
import type { Scope } from '../../src/key/index.js';

/** One positional argument as its payload carries it: the encoding, and the data as text (JSON) or base64 (bytes). */
export type PayloadInput =
  | { readonly encoding: 'json/plain'; readonly data: string }
  | { readonly encoding: 'binary/plain'; readonly data: string }
  | { readonly encoding: 'binary/null' };

/** An array element that is missing (a hole), as opposed to one that holds undefined. */
export interface Hole {
  readonly hole: true;
}

/** A value no payload carries, described by its type: what a TypeScript `keyArgs` can return. */
export type TypedValue =
  | { readonly json: string }
  | { readonly undefined: true }
  | { readonly bytes: string }
  | { readonly date: number | null }
  | { readonly array: ReadonlyArray<TypedValue | Hole>; readonly properties?: ReadonlyArray<readonly [string, TypedValue]> }
  | { readonly object: ReadonlyArray<readonly [string, TypedValue]> };

export interface CallSiteInput {
  readonly workflowId?: string;
  readonly runId?: string;
  readonly activityId: string;
}

/** Exactly one of `args` (the activity's payloads) and `semanticArgs` (what `keyArgs` returned). */
interface Inputs {
  readonly name: string;
  readonly marks: readonly string[];
  readonly args?: readonly PayloadInput[];
  readonly semanticArgs?: TypedValue;
}

export interface CallVector extends Inputs {
  readonly kind: 'call';
  readonly salt: string;
  readonly namespace: string;
  readonly activityType: string;
  readonly scope: Scope;
  readonly callSite: CallSiteInput;
  readonly expected: {
    readonly scopeMaterial: string;
    readonly canonicalArgs: string;
    readonly envelope: string;
    readonly key: string;
    readonly fingerprint: string;
    readonly uuid: string;
  };
}

export interface CustomVector extends Inputs {
  readonly kind: 'custom';
  readonly salt: string;
  readonly namespace: string;
  readonly activityType: string;
  readonly customKey: string;
  readonly expected: {
    readonly canonicalArgs: string;
    readonly envelope: string;
    readonly key: string;
    readonly fingerprint: string;
    readonly uuid: string;
  };
}

export interface RefusalVector extends Inputs {
  readonly kind: 'refusal';
  readonly expected: { readonly refused: { readonly path: string; readonly reason: string } };
}

export type Vector = CallVector | CustomVector | RefusalVector;

export interface VectorFile {
  readonly description: string;
  readonly spec: string;
  readonly keyFormatVersion: number;
  readonly uuidNamespace: string;
  readonly generator: { readonly script: string; readonly seed: number; readonly fastCheck: string };
  readonly marks: Readonly<Record<string, string>>;
  readonly vectors: readonly Vector[];
}

/** The semantic arguments of a vector: the decoded payloads in order, or the typed value. */
export function semanticArgsOf(vector: Inputs): unknown {
  if (vector.args !== undefined) return vector.args.map(decodePayload);
  if (vector.semanticArgs !== undefined) return fromTyped(vector.semanticArgs);
  throw new Error(`vector ${vector.name} has neither args nor semanticArgs`);
}

/** What the activity receives for this payload, by the SDK's own default payload converter. */
export function decodePayload(input: PayloadInput): unknown {
  const payload: Payload = {
    metadata: { encoding: Buffer.from(input.encoding, 'utf8') },
    ...(input.encoding === 'json/plain' ? { data: Buffer.from(input.data, 'utf8') } : {}),
    ...(input.encoding === 'binary/plain' ? { data: Buffer.from(input.data, 'base64') } : {}),
  };
  return defaultPayloadConverter.fromPayload(payload);
}

export function fromTyped(value: TypedValue): unknown {
  if ('json' in value) return JSON.parse(value.json) as unknown;
  if ('undefined' in value) return undefined;
  if ('bytes' in value) return new Uint8Array(Buffer.from(value.bytes, 'base64'));
  if ('date' in value) return new Date(value.date ?? Number.NaN);
  if ('array' in value) {
    const items: unknown[] = new Array(value.array.length);
    value.array.forEach((item, index) => {
      if (!('hole' in item)) items[index] = fromTyped(item);
    });
    for (const [name, item] of value.properties ?? []) Object.defineProperty(items, name, { value: fromTyped(item), enumerable: true, writable: true, configurable: true });
    return items;
  }
  // Own data properties in the given order (`__proto__` included), the last of a repeated name winning, as JSON.parse does.
  const record: Record<string, unknown> = {};
  for (const [name, item] of value.object) Object.defineProperty(record, name, { value: fromTyped(item), enumerable: true, writable: true, configurable: true });
  return record;
}
