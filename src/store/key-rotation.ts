/**
 * Rotating the deployment secret (`keys status`, `keys activate`, `keys retire`): putting a secret in
 * force, signing the rows it must find under it, and retiring the one it replaced. `ClaimOperations`
 * delegates to it, and shares its pool, its tables and its operator trail through a
 * `KeyRotationContext`, so every statement about the key format still has one home.
 */
import type pg from 'pg';
import type { KeyFormatId } from './claim-store.js';
import { CLAIM_READ, signedFieldsOf, toClaim } from './claim-row.js';
import type { ClaimRow } from './claim-row.js';
import { ClaimChangeRefusedError, SecretRequiredError } from './operator-errors.js';
import { inTransaction } from './transaction.js';
import { lockClaimAdmission } from './claim-admission-lock.js';
import { batchSize as checkedBatchSize } from './operation-inputs.js';
import type { RecordAuthentication } from './record-authentication.js';
import type { OperatorTrailEntry } from './operator-trail.js';
import { IdempotencyConfigError } from '../errors.js';

/** What rotation uses of the `ClaimOperations` it belongs to. */
export interface KeyRotationContext {
  readonly pool: pg.Pool;
  /** Unquoted: the claim admission lock is keyed with the schema's name. */
  readonly schema: string;
  /** Quoted, schema-qualified table names. */
  readonly claims: string;
  readonly settings: string;
  readonly workers: string;
  readonly authentication: RecordAuthentication;
  schemaReady(): Promise<void>;
  keyFormatInForce(client?: pg.ClientBase | pg.Pool): Promise<KeyFormatId>;
  recordAction(client: pg.PoolClient, entry: OperatorTrailEntry): Promise<void>;
}

export interface KeyStatus {
  readonly inForce: KeyFormatId;
  /** Rows with no MAC: from before any secret, or written by workers without one. */
  readonly unsignedRows: number;
  /** Rows signed by another secret than the one in force (before a rotation's activation). */
  readonly rowsSignedByOtherSecrets: number;
}

export interface RetirementReport {
  readonly retired: string;
  /** Rows it had signed, signed again with the secret in force. */
  readonly resigned: number;
  /** Rows that did not authenticate: left as they were, refused by the workers. */
  readonly rejected: readonly string[];
}

export interface ActivationReport {
  readonly before: KeyFormatId;
  readonly inForce: KeyFormatId;
  /** Rows signed under the new secret. */
  readonly signed: number;
  /** Keys whose MAC failed under every secret the CLI knows: left as they were, refused by the workers. */
  readonly rejected: readonly string[];
  /** Keys of rows signed by a secret named compromised: left as they were, refused by the workers from now on. */
  readonly distrusted: readonly string[];
}

/** What a pass over the rows did: signed, left alone because their MAC failed, or signed by a secret the CLI lacks. */
interface SigningPass {
  readonly signed: number;
  readonly rejected: string[];
  readonly distrusted: string[];
  readonly unknownSigners: Record<string, number>;
  readonly unknownSignerKeys: string[];
}

/** `activateSecret`'s options, as `keys activate` passes them. */
export type ActivationOptions = {
  reason?: string | undefined;
  batchSize?: number;
  force?: boolean;
  compromised?: readonly string[];
};

/** `retireSecret`'s options, as `keys retire` passes them. */
export type RetirementOptions = { reason?: string | undefined; batchSize?: number };

/** A worker noted within this is counted as running, for `keys activate`'s check. */
const RECENT_WORKER_MS = 5 * 60_000;

export class KeyRotation {
  constructor(private readonly context: KeyRotationContext) {}

  /** For `ClaimOperations.keyStatus`: the format in force, and one scan counting the rows not signed by its secret. */
  async keyStatus(): Promise<KeyStatus> {
    await this.context.schemaReady();
    const inForce = await this.context.keyFormatInForce();
    const { rows } = await this.context.pool.query<{ unsigned: number; other: number }>(
      `
SELECT count(*) FILTER (WHERE record_mac IS NULL)::integer AS unsigned,
  count(*) FILTER (WHERE record_mac IS NOT NULL AND secret_id IS DISTINCT FROM $1)::integer AS other
FROM ${this.context.claims}`,
      [inForce.secretId],
    );
    return { inForce, unsignedRows: rows[0]?.unsigned ?? 0, rowsSignedByOtherSecrets: rows[0]?.other ?? 0 };
  }

  /**
   * For `ClaimOperations.activateSecret`, which says what it does and when to run it. The full pass
   * runs outside any lock, so claims go on meanwhile; the one under the lock every claim takes signs
   * only what came since, and the format switches in that same transaction.
   */
  async activateSecret(options: ActivationOptions = {}): Promise<ActivationReport> {
    const batch = checkedBatchSize(options.batchSize, 500);
    await this.context.schemaReady();
    const secretId = this.context.authentication.signingSecretId;
    if (secretId === null) {
      throw new SecretRequiredError('Activating a secret needs it: give the CLI --worker-config (secret) or TEMPORAL_IDEMPOTENCY_SECRET.');
    }
    const target: KeyFormatId = { version: 2, secretId };
    if ((await this.context.keyFormatInForce()).retiredSecretIds?.includes(secretId)) {
      throw new ClaimChangeRefusedError('retired', undefined, `Secret ${secretId} was retired (\`keys retire\`): it cannot be put in force again. Nothing was changed.`);
    }
    const compromised = new Set(options.compromised ?? []);
    for (const id of compromised) {
      if (typeof id !== 'string' || id.trim() === '') throw new IdempotencyConfigError({ option: 'compromised', message: 'compromised: expected secret ids, as `keys status` shows them.' });
      if (id === secretId) {
        throw new ClaimChangeRefusedError('in-force', undefined, `Secret ${secretId} is the one being activated: it cannot be compromised too. Nothing was changed.`);
      }
    }
    if (!options.force) await this.assertWorkersHold(secretId, (await this.context.keyFormatInForce()).secretId);
    const unlocked = await this.signRowsFor(this.context.pool, target, batch, false, compromised);
    const strangers = Object.keys(unlocked.unknownSigners);
    if (strangers.length > 0 && !options.force) {
      throw new ClaimChangeRefusedError(
        'unknown-signers',
        undefined,
        `${Object.values(unlocked.unknownSigners).reduce((sum, count) => sum + count, 0)} row(s) are signed by secret(s) ` +
          `${strangers.join(', ')}, which the CLI was not given: most likely the workers hold another secret than the one ` +
          `you are activating (${secretId}). Give the CLI the workers' settings (--worker-config, with previousSecrets). ` +
          `Activated as it is, those rows would be refused. The format in force was not changed (--force to activate anyway).`,
      );
    }
    return inTransaction(this.context.pool, async (client) => {
      await lockClaimAdmission(client, this.context.schema);
      const before = await this.context.keyFormatInForce(client);
      // Checked again under the lock: a `keys retire` of this secret may have committed since (two operators,
      // one rolling back as the other finishes a rotation), and a retired secret in force refuses every record.
      if (before.retiredSecretIds?.includes(secretId)) {
        throw new ClaimChangeRefusedError('retired', undefined, `Secret ${secretId} was retired (\`keys retire\`) while this ran: it cannot be put in force again. Nothing was changed.`);
      }
      // Claims wait on this lock: only what came since the full pass.
      const locked = await this.signRowsFor(client, target, batch, true, compromised);
      await client.query(
        `
UPDATE ${this.context.settings} SET key_format = 2, secret_id = $1, activated_at = now(), activated_by = session_user,
  retired_secret_ids = retired_secret_ids || ARRAY(SELECT id FROM unnest($2::text[]) AS id WHERE NOT (id = ANY (retired_secret_ids)))`,
        [secretId, [...compromised]],
      );
      const report: ActivationReport = {
        before,
        inForce: target,
        signed: unlocked.signed + locked.signed,
        rejected: [...new Set([...unlocked.rejected, ...locked.rejected, ...unlocked.unknownSignerKeys, ...locked.unknownSignerKeys])],
        distrusted: [...new Set([...unlocked.distrusted, ...locked.distrusted])],
      };
      await this.context.recordAction(client, {
        action: 'activate-secret',
        key: null,
        reason: options.reason,
        forced: options.force ?? false,
        before: { keyFormat: before, retired: before.retiredSecretIds ?? [] },
        after: { keyFormat: target, signed: report.signed, rejected: report.rejected.length, compromised: [...compromised], distrusted: report.distrusted.length },
      });
      return report;
    });
  }

  /**
   * Signs, under `target`'s secret, every row that authenticates now or is unsigned (`pending`: only
   * those not signed by it yet, which is what came since a full pass); returns what it did.
   */
  private async signRowsFor(
    client: pg.ClientBase | pg.Pool,
    target: KeyFormatId,
    batchSize: number,
    pending = false,
    compromised: ReadonlySet<string> = new Set(),
  ): Promise<SigningPass> {
    const current = await this.context.keyFormatInForce(client);
    let signed = 0;
    const rejected: string[] = [];
    const distrusted: string[] = [];
    const unknownSigners: Record<string, number> = {};
    const unknownSignerKeys: string[] = [];
    for (let after = ''; ; ) {
      // A full pass checks every row, one already signed by the target secret all the same (a forgery is reported).
      const { rows } = await client.query<ClaimRow>(
        `
SELECT ${CLAIM_READ} FROM ${this.context.claims}
WHERE key > $1 AND ($3 = false OR record_mac IS NULL OR secret_id IS DISTINCT FROM $4)
ORDER BY key
LIMIT $2`,
        [after, batchSize, pending, target.secretId],
      );
      if (rows.length === 0) return { signed, rejected, distrusted, unknownSigners, unknownSignerKeys };
      const toSign = { keys: [] as string[], before: [] as (string | null)[], macs: [] as string[] };
      for (const row of rows) {
        if (row.secret_id !== null && compromised.has(row.secret_id)) {
          distrusted.push(row.key);
          continue;
        }
        if (row.record_mac !== null && row.secret_id !== null && !this.context.authentication.secret(row.secret_id)) {
          unknownSigners[row.secret_id] = (unknownSigners[row.secret_id] ?? 0) + 1;
          unknownSignerKeys.push(row.key);
          continue;
        }
        if (!this.trustedForSigning(row, current)) {
          rejected.push(row.key);
          continue;
        }
        if (row.record_mac !== null && row.secret_id === target.secretId) continue;
        toSign.keys.push(row.key);
        toSign.before.push(row.record_mac);
        toSign.macs.push(this.context.authentication.sign(signedFieldsOf(row), target).mac!);
      }
      // One statement a batch; a row changed since it was read (its MAC is not the one read) is left alone.
      const { rowCount } = await client.query(
        `
UPDATE ${this.context.claims} AS claim SET record_mac = signed.mac, secret_id = $4
FROM unnest($1::text[], $2::text[], $3::text[]) AS signed (key, before, mac)
WHERE claim.key = signed.key AND claim.record_mac IS NOT DISTINCT FROM signed.before`,
        [toSign.keys, toSign.before, toSign.macs, target.secretId],
      );
      signed += rowCount ?? 0;
      after = rows[rows.length - 1]!.key;
    }
  }

  /**
   * A worker seen claiming lately (the worker registry) that does not hold `secretId` could claim
   * nothing once it is in force; one that does not hold the secret in force now (`current`) could not
   * find the claims keyed with it, and would call again what they recorded. Refuse, naming them.
   */
  private async assertWorkersHold(secretId: string, current: string | null): Promise<void> {
    const { rows } = await this.context.pool.query<{ identity: string }>(
      `SELECT identity FROM ${this.context.workers}
WHERE seen_at > now() - $2::float8 * interval '1 millisecond'
  AND (NOT ($1 = ANY (secret_ids)) OR ($3::text IS NOT NULL AND NOT ($3 = ANY (secret_ids))))
ORDER BY seen_at DESC`,
      [secretId, RECENT_WORKER_MS, current],
    );
    if (rows.length === 0) return;
    const named = rows.slice(0, 5).map((row) => row.identity);
    const needed = current === null || current === secretId ? `secret ${secretId}` : `both secret ${secretId} and secret ${current} (in force now)`;
    throw new ClaimChangeRefusedError(
      'workers-lack-secret',
      undefined,
      `${rows.length} worker(s) seen claiming in the last ${RECENT_WORKER_MS / 60_000} minutes do not hold ${needed} ` +
        `(${named.join(', ')}${rows.length > named.length ? ', …' : ''}): once it is in force they could claim nothing, or ` +
        `could not find the claims keyed with the secret it replaces and would call again. Roll the secret out to every ` +
        `worker first (secret, with the one it replaces in previousSecrets). The format in force was not changed (--force ` +
        `if those workers are gone).`,
    );
  }

  /**
   * For `ClaimOperations.retireSecret`, which says what it does and when to run it. As activation:
   * a pass outside the lock, then one under it for what came meanwhile, and the retirement recorded
   * in that same transaction.
   */
  async retireSecret(secretId: string, options: RetirementOptions = {}): Promise<RetirementReport> {
    const batch = checkedBatchSize(options.batchSize, 500);
    const inForce = await this.context.keyFormatInForce();
    if (inForce.secretId === secretId) {
      throw new ClaimChangeRefusedError('in-force', undefined, `Secret ${secretId} is the one in force: activate its successor first. Nothing was changed.`);
    }
    if (inForce.secretId === null || !this.context.authentication.secret(inForce.secretId)) {
      throw new SecretRequiredError(`Retiring a secret signs its rows again with the one in force (${inForce.secretId ?? 'none yet'}): give the CLI that secret.`);
    }
    if (!this.context.authentication.secret(secretId)) {
      throw new SecretRequiredError(`Give the CLI secret ${secretId} in previousSecrets: its rows are checked before they are signed again.`);
    }
    const unlocked = await this.signRowsFor(this.context.pool, inForce, batch, true);
    return inTransaction(this.context.pool, async (client) => {
      await lockClaimAdmission(client, this.context.schema);
      // Checked again under the lock: a `keys activate` may have committed since (of this very secret, by an
      // operator rolling back), and the rows are signed again with the secret read in force above.
      const now = await this.context.keyFormatInForce(client);
      if (now.secretId !== inForce.secretId) {
        throw new ClaimChangeRefusedError(
          now.secretId === secretId ? 'in-force' : 'format-changed',
          undefined,
          `The secret in force changed while this ran (${inForce.secretId ?? 'none'} to ${now.secretId ?? 'none'}): ` +
            `nothing was changed. Check \`keys status\`, then run it again if ${secretId} is still to be retired.`,
        );
      }
      const locked = await this.signRowsFor(client, inForce, batch, true);
      await client.query(
        `UPDATE ${this.context.settings} SET retired_secret_ids = array_append(retired_secret_ids, $1) WHERE NOT ($1 = ANY (retired_secret_ids))`,
        [secretId],
      );
      const report: RetirementReport = {
        retired: secretId,
        resigned: unlocked.signed + locked.signed,
        rejected: [...new Set([...unlocked.rejected, ...locked.rejected, ...unlocked.unknownSignerKeys, ...locked.unknownSignerKeys])],
      };
      await this.context.recordAction(client, {
        action: 'retire-secret',
        key: null,
        reason: options.reason,
        forced: false,
        before: { retired: inForce.retiredSecretIds ?? [] },
        after: { retired: secretId, resigned: report.resigned, rejected: report.rejected.length },
      });
      return report;
    });
  }

  /**
   * Unsigned rows are what the deployment held before any secret: trusted, as of the first activation.
   * A signed row only when its MAC checks under a secret the CLI knows.
   */
  private trustedForSigning(row: ClaimRow, current: KeyFormatId): boolean {
    if (row.record_mac === null) return current.version === 1;
    if (row.secret_id === null || !this.context.authentication.secret(row.secret_id)) return false;
    return toClaim(row, this.context.authentication, current).authenticity === 'verified';
  }
}
