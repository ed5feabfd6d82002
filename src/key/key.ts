/**
 * The idempotency key: one stable hex string per logical external action.
 * Framework-free on purpose, so any engine or worker derives the same key.
 *
 * `key = HMAC-SHA256(salt, "key\0" + canonical({ activityType, namespace,
 * scopeMaterial, semanticArgs, v }))`, hex, under the schema's key salt
 * (key-salt.ts); the fingerprint of the arguments likewise, with "fingerprint\0".
 */
import { canonicalize } from './canonical.js';
import type { KeySalt } from './key-salt.js';
import type { ScopeMaterial } from './scope.js';

/** Bumped whenever the canonical form or the hashed envelope changes: every key changes with it. */
export const KEY_FORMAT_VERSION = 1;

export interface KeyInput {
  readonly namespace: string;
  readonly scopeMaterial: ScopeMaterial;
  readonly activityType: string;
  /** The arguments that define the action (all of them unless `keyArgs` picks a part). */
  readonly semanticArgs: unknown;
}

/** The key of one action and the fingerprint of its arguments. */
export interface CallKeys {
  readonly key: string;
  readonly fingerprint: string;
}

export function deriveKey(input: KeyInput, salt: KeySalt): string {
  return deriveCallKeys(input, salt).key;
}

/** The key and the fingerprint together, canonicalizing the arguments once (they can be large). */
export function deriveCallKeys(input: KeyInput, salt: KeySalt): CallKeys {
  return callKeysOf(input, canonicalize(input.semanticArgs, 'args'), salt);
}

/**
 * The key and fingerprint from arguments already in canonical text. The envelope is written by
 * hand, keys in sorted order, so that errors name `args[…]` rather than a path inside the
 * envelope. It is canonicalize() of the whole envelope except for `undefined` arguments, which it
 * writes as `{"$undefined":true}` where a property would be dropped (docs/key-spec.md).
 */
export function callKeysOf(input: Omit<KeyInput, 'semanticArgs'>, argsText: string, salt: KeySalt): CallKeys {
  const key = salt.hash('key', [
    `{"activityType":${JSON.stringify(input.activityType)},"namespace":${JSON.stringify(input.namespace)},` +
      `"scopeMaterial":${canonicalize(input.scopeMaterial, 'scopeMaterial')},"semanticArgs":`,
    argsText,
    `,"v":${KEY_FORMAT_VERSION}}`,
  ]);
  return { key, fingerprint: salt.hash('fingerprint', [argsText]) };
}

/**
 * A key chosen by the user's own `key` function, namespaced and typed like a derived
 * key so that the same string used by two activity types or namespaces never collides.
 */
export function deriveCustomKey(input: { namespace: string; activityType: string; customKey: string }, salt: KeySalt): string {
  const envelope = { v: KEY_FORMAT_VERSION, namespace: input.namespace, activityType: input.activityType, custom: input.customKey };
  return salt.hash('key', [canonicalize(envelope, 'key()')]);
}

/** Identifies the semantic arguments alone, to catch one key reused for a different action. */
export function fingerprintArgs(semanticArgs: unknown, salt: KeySalt): string {
  return salt.hash('fingerprint', [canonicalize(semanticArgs, 'args')]);
}
