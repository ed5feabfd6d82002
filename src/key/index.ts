/**
 * Key derivation, free of any Temporal import: canonical form, scopes and the
 * keyed hashing under the schema's key salt. Importable on its own as
 * `temporal-idempotency/key`.
 */
export { canonicalize } from './canonical.js';
export { InvalidKeyInputError } from './errors.js';
export { KEY_FORMAT_VERSION, callKeysOf, deriveCallKeys } from './key.js';
export type { CallKeys, CustomKeyInput, KeyInput } from './key.js';
export { KeySalt } from './key-salt.js';
export { SCOPES, isScope, scopeMaterial } from './scope.js';
export { KEY_UUID_NAMESPACE, keyToUuid, uuidV5 } from './uuid.js';
export type { CallSite, Scope, ScopeMaterial } from './scope.js';
