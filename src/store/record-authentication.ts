/**
 * Authenticated records. Write access to the claims table is authority over
 * whether a call happens: a `completed` row skips the call, a missing one lets
 * it run. So with a deployment secret, every row the library writes carries an
 * HMAC over what decides a call and what a refusal says (namespace, key,
 * activity type, fingerprint, state, result, note, token, and who claimed
 * it; not its times, which the database's clock sets), and once a
 * secret is in force a row whose MAC does not check is refused, never obeyed:
 * a forged row, a genuine result copied onto another key, one edited in place,
 * an unsigned row.
 *
 * What it cannot do: stop a writer from deleting a row, or from putting back a
 * genuine earlier version of the same key's row. SECURITY.md says what does.
 */
import { DeploymentSecret, UNKEYED, canonicalize, keyedFormat } from '../key/index.js';
import type { KeyFormat, SecretMaterial } from '../key/index.js';
import type { Authenticity, ClaimState, KeyFormatId, KeyFormats } from './claim-store.js';
import type { PayloadJson } from './payload-json.js';
import { IdempotencyError } from '../errors.js';

/** What the MAC covers: everything that decides whether (and with what answer) a call happens, or what a refusal says. */
export interface SignedFields {
  readonly namespace: string;
  readonly key: string;
  /** Signed because refusals and `show` name it: relabelled, an orphaned charge could pass for a newsletter. */
  readonly activityType: string;
  readonly fingerprint: string;
  readonly state: ClaimState;
  readonly token: string;
  readonly attempt: number;
  readonly claimedBy: string;
  readonly workflowId: string | null;
  readonly runId: string | null;
  readonly activityId: string;
  readonly result: PayloadJson | null;
  readonly outcomeNote: string | null;
  readonly outcomeDetail: PayloadJson | null;
}

/**
 * `'unkeyed'`: the time before any secret (key format 1). Accepted for compatibility: claims made
 * in format 1 are always looked up, since every deployment claims in it until a secret is activated.
 */
export type PreviousSecret = SecretMaterial | 'unkeyed';

export interface TrustOptions {
  /** Key material for keyed hashes and record MACs, at least 32 bytes, from your secret manager. */
  readonly secret?: SecretMaterial | undefined;
  /**
   * Earlier secrets (and `'unkeyed'`, which is implied): claims made under their keys are still
   * found, and rows they signed still verify. Keep them until the claims made before the change
   * are past your retention.
   */
  readonly previousSecrets?: readonly PreviousSecret[] | undefined;
}

/** A MAC, and the id of the secret that made it. */
export interface RecordSignature {
  readonly mac: string | null;
  readonly secretId: string | null;
}

/** Raised when the key format in force is one this worker cannot derive (it lacks that secret). */
export class KeyFormatUnavailableError extends IdempotencyError {
  override readonly name = 'KeyFormatUnavailableError';
  readonly code = 'key-format-unavailable';
  constructor(readonly inForce: KeyFormatId) {
    super(
      `This deployment keys its claims with the secret ${inForce.secretId} (key format ${inForce.version}), which this ` +
        `worker was not given: it cannot claim without calling twice. Give it that secret (secret or previousSecrets).`,
    );
  }
}

export class RecordAuthentication {
  /** Every secret this worker knows, by id: the configured one first. */
  private readonly secrets = new Map<string, DeploymentSecret>();
  private readonly configured: DeploymentSecret | undefined;

  constructor(options: TrustOptions = {}) {
    const previous = options.previousSecrets ?? [];
    for (const material of [options.secret, ...previous]) {
      if (material === undefined || material === 'unkeyed') continue;
      const secret = new DeploymentSecret(material);
      this.secrets.set(secret.id, secret);
    }
    this.configured = options.secret === undefined ? undefined : this.secrets.get(new DeploymentSecret(options.secret).id);

  }

  /** Whether this worker can sign at all (it was given a secret). */
  get hasSecret(): boolean {
    return this.secrets.size > 0;
  }

  /** The ids of every secret this worker holds, the configured one first. */
  get secretIds(): string[] {
    return [...this.secrets.keys()];
  }

  /** The id of the configured secret (not a previous one), which an activation puts in force. */
  get signingSecretId(): string | null {
    return this.configured?.id ?? null;
  }

  /** The formats to key claims in while `inForce` is in force; throws when this worker cannot. */
  keyFormats(inForce: KeyFormatId): KeyFormats {
    const current = this.formatOf(inForce);
    if (!current) throw new KeyFormatUnavailableError(inForce);
    // Before a secret is in force there are no keyed claims to find; after, the earlier secrets' and format 1's,
    // always: every deployment claims in format 1 until its first activation, and a call in flight across it
    // must find its own claim (a worker given only `secret` would otherwise call again).
    if (inForce.version === 1) return { inForce: current, previous: [] };
    const others = [...this.secrets.values()].filter((secret) => secret.id !== inForce.secretId).map((secret) => keyedFormat(secret));
    return { inForce: current, previous: [...others, UNKEYED] };
  }

  /**
   * Signs with the secret in force; before any is (format 1), with this worker's own secret, so the
   * activation has fewer rows to sign. Unsigned when this worker has no secret to use.
   */
  sign(fields: SignedFields, inForce: KeyFormatId): RecordSignature {
    const signer = inForce.secretId !== null ? this.secrets.get(inForce.secretId) : this.configured;
    return signer ? { mac: signer.sign(recordText(fields)), secretId: signer.id } : { mac: null, secretId: null };
  }

  /**
   * Before a secret is in force nothing is trusted or refused, but a MAC this worker can check and
   * finds wrong (tampering). Once one is, a row must carry a MAC by a secret this worker knows.
   */
  check(fields: SignedFields, signature: RecordSignature, inForce: KeyFormatId): Authenticity {
    // A retired secret (rotated away from, perhaps leaked) vouches for nothing, whoever holds it.
    if (signature.secretId !== null && inForce.retiredSecretIds?.includes(signature.secretId)) return 'rejected';
    const secret = signature.secretId === null ? undefined : this.secrets.get(signature.secretId);
    if (signature.mac === null || !secret) return inForce.version === 1 ? 'not-checked' : 'rejected';
    return secret.verify(recordText(fields), signature.mac) ? 'verified' : 'rejected';
  }

  /** The secret with this id, when this worker knows it. */
  secret(id: string): DeploymentSecret | undefined {
    return this.secrets.get(id);
  }

  private formatOf(inForce: KeyFormatId): KeyFormat | undefined {
    if (inForce.version === 1) return UNKEYED;
    const secret = inForce.secretId === null ? undefined : this.secrets.get(inForce.secretId);
    return secret ? keyedFormat(secret) : undefined;
  }
}

/** Exactly the signed fields, whatever else the object handed in carries (a whole claim, say). */
export function recordText(fields: SignedFields): string {
  const { namespace, key, activityType, fingerprint, state, token, attempt, claimedBy, workflowId, runId, activityId, result, outcomeNote, outcomeDetail } =
    fields;
  return canonicalize(
    { v: 3, namespace, key, activityType, fingerprint, state, token, attempt, claimedBy, workflowId, runId, activityId, result, outcomeNote, outcomeDetail },
    'record',
  );
}
