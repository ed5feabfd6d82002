/**
 * The idempotency key: one stable hex string per logical external action.
 * Framework-free on purpose, so any engine or worker derives the same key.
 *
 * Two formats: 1, `sha256` of the canonical envelope (the default), and 2, an
 * HMAC of it under a deployment secret (key-format.ts), so a key in history,
 * the Web UI or a log does not reveal low-entropy arguments such as a phone number.
 */
import { canonicalize } from './canonical.js';
import { UNKEYED } from './key-format.js';
import type { KeyFormat } from './key-format.js';
import type { ScopeMaterial } from './scope.js';

/** The unkeyed format; bumped whenever the canonical form or the hashed envelope changes. */
export const KEY_FORMAT_VERSION = 1;

export interface KeyInput {
  readonly namespace: string;
  readonly scopeMaterial: ScopeMaterial;
  readonly activityType: string;
  /** The arguments that define the action (all of them unless `keyArgs` picks a part). */
  readonly semanticArgs: unknown;
}

/** The key of one action and the fingerprint of its arguments, in one key format. */
export interface CallKeys {
  readonly key: string;
  readonly fingerprint: string;
  readonly format: KeyFormat['version'];
}

/** `hash(canonical({ v, namespace, scopeMaterial, activityType, semanticArgs }))`, hex. */
export function deriveKey(input: KeyInput, format: KeyFormat = UNKEYED): string {
  return deriveCallKeys(input, format).key;
}

/** The key and the fingerprint together, canonicalizing the arguments once (they can be large). */
export function deriveCallKeys(input: KeyInput, format: KeyFormat = UNKEYED): CallKeys {
  return callKeysOf(input, canonicalize(input.semanticArgs, 'args'), format);
}

/**
 * The key and fingerprint from arguments already in canonical text. The envelope is written by
 * hand, keys in sorted order, so that errors name `args[…]` rather than a path inside the
 * envelope; the text is exactly canonicalize() of the whole envelope.
 */
export function callKeysOf(input: Omit<KeyInput, 'semanticArgs'>, argsText: string, format: KeyFormat): CallKeys {
  const key = format.hash([
    `{"activityType":${JSON.stringify(input.activityType)},"namespace":${JSON.stringify(input.namespace)},` +
      `"scopeMaterial":${canonicalize(input.scopeMaterial, 'scopeMaterial')},"semanticArgs":`,
    argsText,
    `,"v":${format.version}}`,
  ]);
  return { key, fingerprint: format.fingerprint(argsText), format: format.version };
}

/**
 * A key chosen by the user's own `key` function, namespaced and typed like a derived
 * key so that the same string used by two activity types or namespaces never collides.
 */
export function deriveCustomKey(
  input: { namespace: string; activityType: string; customKey: string },
  format: KeyFormat = UNKEYED,
): string {
  return format.hash([
    canonicalize({ v: format.version, namespace: input.namespace, activityType: input.activityType, custom: input.customKey }),
  ]);
}

/** Identifies the semantic arguments alone, to catch one key reused for a different action. */
export function fingerprintArgs(semanticArgs: unknown, format: KeyFormat = UNKEYED): string {
  return format.fingerprint(canonicalize(semanticArgs, 'args'));
}

export { sha256Hex } from './key-format.js';
