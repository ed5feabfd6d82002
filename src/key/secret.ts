/**
 * A deployment secret, and the keys derived from it: one to key the idempotency
 * keys and fingerprints (so a low-entropy argument such as a phone number cannot
 * be recovered from a key in history, the Web UI or logs), one to authenticate
 * recorded outcomes (so a row written by anyone without the secret is refused).
 * Framework-free, like the rest of src/key.
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { InvalidSecretError } from './errors.js';

/** Key material as given: a string (its UTF-8 bytes) or raw bytes, at least 32 bytes. */
export type SecretMaterial = string | Uint8Array;

export const MIN_SECRET_BYTES = 32;

export class DeploymentSecret {
  private readonly keying: Buffer;
  private readonly recordSigning: Buffer;
  /** A short, non-secret name for logs and errors: which secret signed or keyed something. */
  readonly id: string;

  constructor(material: SecretMaterial) {
    if (typeof material !== 'string' && !(material instanceof Uint8Array)) {
      throw new InvalidSecretError(`The idempotency secret must be a string or a Uint8Array, got ${typeof material}.`);
    }
    const bytes = typeof material === 'string' ? Buffer.from(material, 'utf8') : Buffer.from(material);
    if (bytes.length < MIN_SECRET_BYTES) {
      throw new InvalidSecretError(
        `The idempotency secret has ${bytes.length} bytes; use at least ${MIN_SECRET_BYTES} random bytes ` +
          '(e.g. `openssl rand -base64 48`), loaded from your secret manager.',
      );
    }
    // Separate keys per use, so a MAC can never be replayed as a key or the other way round.
    this.keying = derive(bytes, 'keys and fingerprints v2');
    this.recordSigning = derive(bytes, 'records v1');
    this.id = derive(bytes, 'id').subarray(0, 4).toString('hex');
  }

  /** HMAC-SHA256 of `text` under the keying key, hex: a key or a fingerprint. */
  keyedHash(text: string | readonly string[]): string {
    const mac = createHmac('sha256', this.keying);
    for (const part of typeof text === 'string' ? [text] : text) mac.update(part, 'utf8');
    return mac.digest('hex');
  }

  /** HMAC-SHA256 of a record's canonical text under the record-signing key, hex. */
  sign(recordText: string): string {
    return createHmac('sha256', this.recordSigning).update(recordText, 'utf8').digest('hex');
  }

  verify(recordText: string, mac: string): boolean {
    const expected = Buffer.from(this.sign(recordText), 'hex');
    const given = Buffer.from(mac, 'hex');
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}

function derive(material: Buffer, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', material, 'temporal-idempotency', purpose, 32));
}
