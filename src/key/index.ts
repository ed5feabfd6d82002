/**
 * Key derivation, free of any Temporal import: canonical form, scopes, hashing,
 * and the deployment secret that keys them. Importable on its own as
 * `temporal-idempotency/key`.
 */
export { canonicalTree, canonicalize } from './canonical.js';
export { InvalidKeyInputError, InvalidSecretError } from './errors.js';
export type { Canonical } from './canonical.js';
export { KEY_FORMAT_VERSION, callKeysOf, deriveCallKeys, deriveKey, deriveCustomKey, fingerprintArgs, sha256Hex } from './key.js';
export type { CallKeys, KeyInput } from './key.js';
export { UNKEYED, keyedFormat } from './key-format.js';
export type { KeyFormat } from './key-format.js';
export { DeploymentSecret, MIN_SECRET_BYTES } from './secret.js';
export type { SecretMaterial } from './secret.js';
export { SCOPES, isScope, scopeMaterial } from './scope.js';
export { KEY_UUID_NAMESPACE, keyToUuid, uuidV5 } from './uuid.js';
export type { CallSite, Scope, ScopeMaterial } from './scope.js';
