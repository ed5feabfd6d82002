/**
 * How a key and a fingerprint are hashed: format 1 with plain SHA-256, format 2
 * with an HMAC under a deployment secret. Changing either changes every key, so
 * each is a numbered format, and a deployment moving from one to the other
 * claims under both for a while (see call-identity.ts in the worker).
 */
import { createHash } from 'node:crypto';
import type { DeploymentSecret } from './secret.js';

export interface KeyFormat {
  readonly version: 1 | 2;
  /** The key: a hash of the envelope's text, given in parts so large arguments are never concatenated. */
  hash(parts: readonly string[]): string;
  /** The fingerprint of the arguments' canonical text. */
  fingerprint(argsText: string): string;
}

/** Format 1: `sha256`, hex. Anyone who can guess the arguments can check a guess against a key. */
export const UNKEYED: KeyFormat = {
  version: 1,
  hash: (parts) => {
    const hash = createHash('sha256');
    for (const part of parts) hash.update(part, 'utf8');
    return hash.digest('hex');
  },
  fingerprint: (argsText) => sha256Hex(argsText),
};

/** Format 2: HMAC-SHA256 under the deployment secret; without the secret a key reveals nothing. */
export function keyedFormat(secret: DeploymentSecret): KeyFormat {
  return {
    version: 2,
    hash: (parts) => secret.keyedHash(['key\u0000', ...parts]),
    fingerprint: (argsText) => secret.keyedHash(['fingerprint\u0000', argsText]),
  };
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}
