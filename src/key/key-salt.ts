/**
 * The key salt: keys and fingerprints are HMAC-SHA256 under it, so a key in
 * workflow history, the Web UI or a log confirms no guess of a low-entropy
 * argument (a phone number) to anyone who cannot read the schema that keeps it.
 * The first `migrate` makes it, and nothing changes it afterwards: no deployment
 * step can give a call another key than the one its claim was made under.
 */
import { createHmac } from 'node:crypto';
import { InvalidArgumentError } from '../errors.js';

/** Fewer random bytes than this cannot be a salt `migrate` made (it makes 32). */
const MIN_SALT_BYTES = 16;

export class KeySalt {
  private readonly bytes: Buffer;

  constructor(bytes: Uint8Array) {
    if (!(bytes instanceof Uint8Array) || bytes.length < MIN_SALT_BYTES) {
      throw new InvalidArgumentError('keySalt', `A key salt is at least ${MIN_SALT_BYTES} bytes (migrate makes 32); got ${bytes instanceof Uint8Array ? `${bytes.length} bytes` : typeof bytes}.`);
    }
    this.bytes = Buffer.from(bytes);
  }

  get hex(): string {
    return this.bytes.toString('hex');
  }

  /**
   * HMAC-SHA256, hex, of `purpose`, a NUL, then `parts` (given in parts so large arguments are never
   * concatenated): the purpose keeps a key from ever equalling a fingerprint.
   */
  hash(purpose: 'key' | 'fingerprint', parts: readonly string[]): string {
    const mac = createHmac('sha256', this.bytes);
    mac.update(`${purpose}\u0000`, 'utf8');
    for (const part of parts) mac.update(part, 'utf8');
    return mac.digest('hex');
  }
}
