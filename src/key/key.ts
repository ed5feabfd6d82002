/**
 * The idempotency key: one stable hex string per logical external action.
 * Framework-free on purpose, so any engine or worker derives the same key.
 */
import { createHash } from 'node:crypto';
import { canonicalize } from './canonical.js';
import type { ScopeMaterial } from './scope.js';

/** Bumped whenever the canonical form or the hashed envelope changes; old claims then stop matching. */
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

/** `sha256(canonical({ v, namespace, scopeMaterial, activityType, semanticArgs }))`, hex. */
export function deriveKey(input: KeyInput): string {
  return deriveCallKeys(input).key;
}

/**
 * The key and the fingerprint together, canonicalizing the arguments once (they can be large).
 * The envelope is written by hand, keys in sorted order, so that errors name `args[…]` rather
 * than a path inside the envelope; the text is exactly canonicalize() of the whole envelope.
 */
export function deriveCallKeys(input: KeyInput): CallKeys {
  const args = canonicalize(input.semanticArgs, 'args');
  const key = createHash('sha256')
    .update(
      `{"activityType":${JSON.stringify(input.activityType)},"namespace":${JSON.stringify(input.namespace)},` +
        `"scopeMaterial":${canonicalize(input.scopeMaterial, 'scopeMaterial')},"semanticArgs":`,
      'utf8',
    )
    .update(args, 'utf8')
    .update(`,"v":${KEY_FORMAT_VERSION}}`, 'utf8')
    .digest('hex');
  return { key, fingerprint: sha256Hex(args) };
}

/**
 * A key chosen by the user's own `key` function, namespaced and typed like a derived
 * key so that the same string used by two activity types or namespaces never collides.
 */
export function deriveCustomKey(input: { namespace: string; activityType: string; customKey: string }): string {
  return sha256Hex(
    canonicalize({ v: KEY_FORMAT_VERSION, namespace: input.namespace, activityType: input.activityType, custom: input.customKey }),
  );
}

/** Identifies the semantic arguments alone, to catch one key reused for a different action. */
export function fingerprintArgs(semanticArgs: unknown): string {
  return sha256Hex(canonicalize(semanticArgs, 'args'));
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}
