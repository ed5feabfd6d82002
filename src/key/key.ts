/**
 * The idempotency key: one stable hex string per logical external action.
 * Framework-free on purpose, so any engine or worker derives the same key.
 *
 * `key = HMAC-SHA256(salt, "key\0" + canonical({ activityType, namespace,
 * scopeMaterial, semanticArgs, v }))`, hex, under the schema's key salt
 * (key-salt.ts); the fingerprint of the arguments likewise, with "fingerprint\0".
 */
import { canonicalize } from './canonical.js';
import { InvalidKeyInputError } from './errors.js';
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

/** A call keyed by the user's own `key()` rather than by its scope and arguments. */
export interface CustomKeyInput extends Pick<KeyInput, 'namespace' | 'activityType'> {
  readonly customKey: string;
}

/** The key of one action and the fingerprint of its arguments. */
export interface CallKeys {
  readonly key: string;
  readonly fingerprint: string;
}

/** The key and the fingerprint of a call, canonicalizing its arguments once (they can be large). */
export function deriveCallKeys(input: KeyInput, salt: KeySalt): CallKeys {
  const { namespace, activityType, scopeMaterial, semanticArgs } = input;
  return callKeysOf({ namespace, activityType, scopeMaterial }, canonicalize(semanticArgs, 'args'), salt);
}

/**
 * The key and fingerprint from arguments already in canonical text. A derived key's envelope is
 * written by hand, keys in sorted order, so that errors name `args[…]` rather than a path inside it:
 * it is canonicalize() of the whole envelope except for `undefined` arguments, which it writes as
 * `{"$undefined":true}` where a property would be dropped (docs/key-spec.md). A `customKey` (the
 * user's `key()`) is namespaced and typed likewise, so one string used by two activity types or
 * namespaces never collides; the arguments are still fingerprinted, to catch it reused for another action.
 */
export function callKeysOf(input: Omit<KeyInput, 'semanticArgs'> | CustomKeyInput, argsText: string, salt: KeySalt): CallKeys {
  const { namespace, activityType } = input;
  const fingerprint = salt.hash('fingerprint', [argsText]);
  // Its own property only: a `customKey` inherited (a polluted prototype) must not turn every call into one key.
  if (!Object.hasOwn(input, 'customKey')) {
    const envelope = `{"activityType":${JSON.stringify(activityType)},"namespace":${JSON.stringify(namespace)},` +
      `"scopeMaterial":${canonicalize((input as Omit<KeyInput, 'semanticArgs'>).scopeMaterial, 'scopeMaterial')},"semanticArgs":`;
    return { key: salt.hash('key', [envelope, argsText, `,"v":${KEY_FORMAT_VERSION}}`]), fingerprint };
  }
  const { customKey } = input as CustomKeyInput;
  // Empty, not a string, or beside a scope: every call of the type would share one key, or the wrong one be meant.
  if (typeof customKey !== 'string' || customKey === '' || Object.hasOwn(input, 'scopeMaterial')) {
    throw new InvalidKeyInputError('customKey', 'a custom key is a non-empty string, given instead of a scopeMaterial');
  }
  return { key: salt.hash('key', [canonicalize({ v: KEY_FORMAT_VERSION, namespace, activityType, custom: customKey }, 'key()')]), fingerprint };
}
