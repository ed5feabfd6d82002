/**
 * Signed records. Write access to the claims table is authority over whether a
 * call happens: a `completed` row skips the call, a missing one lets it run. So
 * with a record secret, every row the library writes carries an HMAC over the
 * fields below, and a row that does not check is refused, never obeyed: a forged
 * row, a genuine result copied onto another key, one edited in place.
 *
 * Secrets rotate by configuration, as JWT signing keys do: `secret` signs,
 * `previousSecrets` only verify, and `keys re-sign` moves rows to the signing
 * secret before an old one is dropped. A row signed by a secret this worker does
 * not hold is `unverifiable` (a rollout in progress, refused retryably); one whose
 * MAC fails under a secret it holds is `rejected` (refused for a person).
 *
 * What it cannot do: stop a writer from deleting a row, or from putting back a
 * genuine earlier version of the same key's row. SECURITY.md says what does.
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { canonicalize } from '../key/index.js';
import type { Authenticity, Claim } from './claim-store.js';
import type { PayloadJson } from './payload-json.js';
import { IdempotencyError } from '../errors.js';

/**
 * What the MAC covers: everything that decides whether (and with what answer) a call happens, or what a
 * refusal says. `activityType` too, because refusals and `show` name it: relabelled, an orphaned charge
 * could pass for a newsletter. Not the row's times, which the database's clock sets.
 */
const SIGNED_FIELDS = [
  'namespace', 'key', 'activityType', 'fingerprint', 'state', 'token', 'attempt', 'claimedBy', 'workflowId', 'runId', 'activityId',
  'result', 'outcomeNote', 'outcomeDetail',
] as const;

/** The signed fields as a row holds them: results and notes as stored JSON, not decoded payloads. */
export type SignedFields = Pick<Claim, Exclude<(typeof SIGNED_FIELDS)[number], 'result' | 'outcomeDetail'>> & {
  readonly result: PayloadJson | null;
  readonly outcomeDetail: PayloadJson | null;
};

/** Key material as given: a string (its UTF-8 bytes) or raw bytes, at least 32 bytes. */
export type SecretMaterial = string | Uint8Array;

/** `'unsigned'`: rows without a MAC are obeyed too, while a deployment adopts its first secret. */
export type PreviousSecret = SecretMaterial | 'unsigned';

export interface TrustOptions {
  /** Signs every row this worker writes, and verifies them: at least 32 random bytes, from your secret manager. */
  readonly secret?: SecretMaterial | undefined;
  /** Verify only: the secrets a rotation moves away from, and `'unsigned'` while adopting a first secret. */
  readonly previousSecrets?: readonly PreviousSecret[] | undefined;
}

/** A MAC, and the id of the secret that made it; both null for an unsigned row. */
export interface RecordSignature {
  readonly mac: string | null;
  readonly secretId: string | null;
}

export const MIN_SECRET_BYTES = 32;

/**
 * Secret ids an operator names (`--distrust`), checked before anything is done with them: a typo
 * would otherwise distrust nothing, and the leaked secret's rows would be signed anew.
 */
export function secretIds(option: string, ids: unknown): string[] {
  if (!Array.isArray(ids)) throw new InvalidSecretError(`${option}: expected an array of secret ids, as \`keys status\` shows them.`);
  return ids.map((id: unknown) => {
    const text = typeof id === 'string' ? id.trim().toLowerCase() : '';
    if (!/^[0-9a-f]{8}$/.test(text)) {
      throw new InvalidSecretError(`${option}: ${JSON.stringify(id)} is not a secret id (8 hex digits, as \`keys status\` shows them). Nothing was changed.`);
    }
    return text;
  });
}

/** Raised when a record secret given is unusable (too short, wrong type). */
export class InvalidSecretError extends IdempotencyError {
  override readonly name = 'InvalidSecretError';
  readonly code = 'invalid-secret';
}

/** One record secret: the key its MACs are made with, and a short non-secret id that names it in rows and messages. */
export class RecordSecret {
  readonly id: string;
  private readonly key: Buffer;

  constructor(material: SecretMaterial) {
    const bytes = typeof material === 'string' ? Buffer.from(material, 'utf8') : material instanceof Uint8Array ? Buffer.from(material) : undefined;
    if (bytes === undefined || bytes.length < MIN_SECRET_BYTES) {
      throw new InvalidSecretError(
        `A record secret is a string or a Uint8Array of at least ${MIN_SECRET_BYTES} random bytes (e.g. \`openssl rand -base64 48\`), ` +
          `loaded from your secret manager; got ${bytes ? `${bytes.length} bytes` : material === null ? 'null' : typeof material}.`,
      );
    }
    this.key = derive(bytes, 'records v1');
    this.id = derive(bytes, 'id').subarray(0, 4).toString('hex');
  }

  /** The MAC of exactly the signed fields, whatever else the object handed in carries (a whole claim, say). */
  mac(fields: SignedFields): Buffer {
    const text = canonicalize({ v: 3, ...Object.fromEntries(SIGNED_FIELDS.map((name) => [name, fields[name]])) }, 'record');
    return createHmac('sha256', this.key).update(text, 'utf8').digest();
  }
}

export class RecordSigner {
  private readonly signing: RecordSecret | undefined;
  /** Every secret held here, by id. */
  private readonly secrets: ReadonlyMap<string, RecordSecret>;
  /** Whether unsigned rows are obeyed: by a signer that signs nothing (they are its own), or with `'unsigned'` listed. */
  private readonly obeysUnsigned: boolean;

  constructor(options: TrustOptions = {}) {
    const previous = options.previousSecrets ?? [];
    if (!Array.isArray(previous)) throw new InvalidSecretError("previousSecrets must be an array of secrets (and 'unsigned').");
    // Given, but empty: a secret manager that answered nothing. Left out, it would obey any unsigned row, forged or not.
    if ('secret' in options && (options.secret === undefined || options.secret === null)) {
      throw new InvalidSecretError(
        `The record secret given is ${String(options.secret)}: your secret manager returned nothing. Without a secret ` +
          'a worker obeys unsigned rows, which anyone who can write the table can make; leave the option out only ' +
          'where no record is signed.',
      );
    }
    // A worker that signs nothing writes unsigned rows: with previous secrets it must say it obeys them.
    if (options.secret === undefined && previous.length > 0 && !previous.includes('unsigned')) {
      throw new InvalidSecretError(
        "previousSecrets without secret: this worker would sign nothing, and obey any unsigned row. While adopting a first " +
          "secret, say so: previousSecrets: ['unsigned', …]; otherwise give it the deployment's secret.",
      );
    }
    this.signing = options.secret === undefined ? undefined : new RecordSecret(options.secret);
    const verifying = previous.filter((material) => material !== 'unsigned').map((material) => new RecordSecret(material));
    this.secrets = new Map([...verifying, ...(this.signing ? [this.signing] : [])].map((secret) => [secret.id, secret]));
    this.obeysUnsigned = this.signing === undefined || previous.includes('unsigned');
  }

  /** The id of the secret this signer signs with; null when it signs nothing. */
  get signingSecretId(): string | null {
    return this.signing?.id ?? null;
  }

  holds(secretId: string): boolean {
    return this.secrets.has(secretId);
  }

  /** Signed with `secret`; unsigned when this signer has none. */
  sign(fields: SignedFields): RecordSignature {
    return this.signing ? { mac: this.signing.mac(fields).toString('hex'), secretId: this.signing.id } : { mac: null, secretId: null };
  }

  check(fields: SignedFields, { mac, secretId }: RecordSignature): Authenticity {
    if (secretId === null) return this.obeysUnsigned ? 'not-checked' : 'unverifiable';
    const secret = this.secrets.get(secretId);
    if (!secret) return 'unverifiable';
    const expected = secret.mac(fields);
    const given = Buffer.from(mac ?? '', 'hex');
    return given.length === expected.length && timingSafeEqual(given, expected) ? 'verified' : 'rejected';
  }
}

function derive(material: Buffer, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', material, 'temporal-idempotency', purpose, 32));
}
