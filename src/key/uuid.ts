/**
 * A deterministic UUID for a key, for vendors whose idempotency keys must be
 * UUIDs: RFC 9562 version 5 (SHA-1 of a fixed namespace and the key), so any
 * worker, in any language, derives the same UUID from the same key.
 */
import { createHash } from 'node:crypto';

/** This library's UUID namespace; changing it changes every derived UUID. */
export const KEY_UUID_NAMESPACE = '6f1c2b9e-3d4a-5b7c-8e9f-0a1b2c3d4e5f';

export function keyToUuid(key: string): string {
  return uuidV5(key, KEY_UUID_NAMESPACE);
}

export function uuidV5(name: string, namespace: string): string {
  const namespaceBytes = Buffer.from(namespace.replace(/-/g, ''), 'hex');
  const bytes = createHash('sha1').update(namespaceBytes).update(name, 'utf8').digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50; // version 5
  bytes[8] = (bytes[8]! & 0x3f) | 0x80; // RFC variant
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
