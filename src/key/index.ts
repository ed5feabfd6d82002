/**
 * Key derivation, free of any Temporal import: canonical form, scopes and hashing.
 * Importable on its own as `temporal-idempotency/key`.
 */
export { canonicalTree, canonicalize } from './canonical.js';
export { InvalidKeyInputError } from './errors.js';
export type { Canonical } from './canonical.js';
export { KEY_FORMAT_VERSION, deriveCallKeys, deriveKey, deriveCustomKey, fingerprintArgs, sha256Hex } from './key.js';
export type { CallKeys, KeyInput } from './key.js';
export { SCOPES, isScope, scopeMaterial } from './scope.js';
export { KEY_UUID_NAMESPACE, keyToUuid, uuidV5 } from './uuid.js';
export type { CallSite, Scope, ScopeMaterial } from './scope.js';
