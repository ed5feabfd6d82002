/**
 * Authenticated records. Write access to the claims table is authority over
 * whether a call happens: a `completed` row skips the call, a missing one lets
 * it run. So with a deployment secret, every row the library writes carries an
 * HMAC over what decides a call (namespace, key, fingerprint, state, result),
 * and a row whose MAC does not check is refused, never obeyed: a forged row, a
 * genuine result copied onto another key, a result edited in place.
 *
 * What it cannot do: stop a writer from deleting a row, or from putting back a
 * genuine earlier version of the same key's row. SECURITY.md says what does.
 */
import { DeploymentSecret, UNKEYED, canonicalize, keyedFormat } from '../key/index.js';
import type { SecretMaterial } from '../key/index.js';
import type { Authenticity, ClaimState, KeyFormats } from './claim-store.js';
import type { PayloadJson } from './payload-json.js';

/** What the MAC covers: everything that decides whether, and with what answer, a call happens. */
export interface SignedFields {
  readonly namespace: string;
  readonly key: string;
  readonly fingerprint: string;
  readonly state: ClaimState;
  readonly result: PayloadJson | null;
}

/** `'unkeyed'`: the time before any secret (key format 1, unsigned rows). */
export type PreviousSecret = SecretMaterial | 'unkeyed';

export interface TrustOptions {
  /** Key material for keyed hashes and record MACs, at least 32 bytes, from your secret manager. */
  readonly secret?: SecretMaterial | undefined;
  /**
   * Earlier secrets, and `'unkeyed'` for the time before any: their MACs still verify (and with
   * `'unkeyed'`, unsigned rows are accepted), and claims made under their keys are still found.
   * Keep them until the claims made before the change are past your retention.
   */
  readonly previousSecrets?: readonly PreviousSecret[] | undefined;
}

export class RecordAuthentication {
  private readonly current: DeploymentSecret | null;
  private readonly previous: readonly DeploymentSecret[];
  private readonly acceptsUnsigned: boolean;
  readonly keyFormats: KeyFormats;

  constructor(options: TrustOptions = {}) {
    this.current = options.secret === undefined ? null : new DeploymentSecret(options.secret);
    const previous = options.previousSecrets ?? [];
    this.previous = previous.filter((entry): entry is SecretMaterial => entry !== 'unkeyed').map((entry) => new DeploymentSecret(entry));
    this.acceptsUnsigned = this.current === null || previous.includes('unkeyed');
    this.keyFormats = this.current
      ? {
          current: keyedFormat(this.current),
          previous: [...this.previous.map((secret) => keyedFormat(secret)), ...(previous.includes('unkeyed') ? [UNKEYED] : [])],
        }
      : { current: UNKEYED, previous: [] };
  }

  /** Whether rows are signed: a secret is configured. */
  get signs(): boolean {
    return this.current !== null;
  }

  /** The MAC to store with a row, or null without a secret. */
  sign(fields: SignedFields): string | null {
    return this.current?.sign(recordText(fields)) ?? null;
  }

  check(fields: SignedFields, mac: string | null): Authenticity {
    if (!this.current) return 'not-checked';
    if (mac === null) return this.acceptsUnsigned ? 'not-checked' : 'rejected';
    const text = recordText(fields);
    return [this.current, ...this.previous].some((secret) => secret.verify(text, mac)) ? 'verified' : 'rejected';
  }
}

function recordText(fields: SignedFields): string {
  return canonicalize({ v: 1, ...fields }, 'record');
}
