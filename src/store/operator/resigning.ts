/**
 * `keys status` and `keys re-sign`: which record secrets sign the rows, and
 * moving every row a rotation leaves behind to the signing secret, so the old
 * one can be dropped. A row is signed anew only once its MAC checks under a
 * secret the CLI holds (or it is unsigned and the CLI obeys unsigned rows), and
 * only if nobody changed it since it was read: no lock, no pause for the workers.
 */
import { signedFieldsOf, toClaim } from '../claim-row.js';
import type { ClaimRow } from '../claim-row.js';
import { SecretRequiredError } from '../operator-errors.js';
import { InvalidSecretError, secretIds } from '../record-signing.js';
import { batchSize } from '../operation-inputs.js';
import { inTransaction } from '../transaction.js';
import { recordOperatorAction } from './context.js';
import type { OperatorContext } from './context.js';

/** How many rows each record secret signs (`unsigned`: rows without a MAC), and whether the CLI holds it. */
export interface SignerCount {
  readonly secretId: string | 'unsigned';
  readonly rows: number;
  /** `signing`: the CLI's `secret`; `previous`: in its `previousSecrets`; `not-held`: neither. */
  readonly heldAs: 'signing' | 'previous' | 'not-held';
}

export interface ResigningReport {
  /** The secret every row it moved is signed with now. */
  readonly signingSecretId: string;
  readonly resigned: number;
  /** Rows whose MAC fails under the secret they name: refused by the workers, left for a person. */
  readonly rejected: readonly string[];
  /** Rows signed by a secret the CLI does not hold (or unsigned, where it requires signatures): left as they are. */
  readonly unverifiable: readonly string[];
  /** Rows signed by a secret named in `distrust`: left for a person, however well they check. */
  readonly distrusted: readonly string[];
  /** Rows changed between this pass's read and its write (a worker settled or renewed them): run it again. */
  readonly changedMeanwhile: number;
}

export async function signerCounts({ pool, sql, signer }: OperatorContext): Promise<SignerCount[]> {
  const { rows } = await pool.query<{ secret_id: string | null; rows: number }>(sql.claims.signers);
  return rows.map((row) => ({
    secretId: row.secret_id ?? 'unsigned',
    rows: row.rows,
    heldAs: row.secret_id === null ? 'not-held' : row.secret_id === signer.signingSecretId ? 'signing' : signer.holds(row.secret_id) ? 'previous' : 'not-held',
  }));
}

/**
 * `keys re-sign`, checked and recorded: a distrusted id must be one the CLI holds or some row's signer
 * (a typo would leave the leaked secret trusted), and the pass goes on the operator trail.
 */
export async function resign(
  context: OperatorContext,
  options: { distrust?: readonly string[]; reason?: string | undefined; batchSize?: number },
): Promise<ResigningReport> {
  const batch = batchSize(options.batchSize, 500);
  const distrust = secretIds('distrust', options.distrust ?? []);
  const signingSecretId = context.signer.signingSecretId;
  if (signingSecretId === null) {
    throw new SecretRequiredError('keys re-sign signs with the workers\' current secret: give the CLI --worker-config (secret) or TEMPORAL_IDEMPOTENCY_SECRET.');
  }
  await context.ready();
  const signers = new Set((await signerCounts(context)).map((signer) => signer.secretId));
  const unknown = distrust.filter((id) => !signers.has(id) && !context.signer.holds(id));
  if (unknown.length > 0) {
    throw new InvalidSecretError(
      `--distrust ${unknown.join(', ')}: no row here is signed by it and the CLI does not hold it; a typo would leave the ` +
        'leaked secret trusted. Check `keys status`. Nothing was changed.',
    );
  }
  const report = await resignRows(context, signingSecretId, new Set(distrust), batch);
  await inTransaction(context.pool, (client) =>
    recordOperatorAction(context, client, {
      action: 're-sign',
      key: null,
      reason: options.reason,
      forced: false,
      before: { distrust },
      after: {
        signedBy: report.signingSecretId,
        resigned: report.resigned,
        rejected: report.rejected.length,
        unverifiable: report.unverifiable.length,
        distrusted: report.distrusted.length,
        changedMeanwhile: report.changedMeanwhile,
      },
    }),
  );
  return report;
}

/** Signs with `signingSecretId` every row that checks and is signed by another secret (or none); see the module's comment. */
async function resignRows(context: OperatorContext, signingSecretId: string, distrust: ReadonlySet<string>, batch: number): Promise<ResigningReport> {
  const { pool, sql, signer } = context;
  const report = { signingSecretId, resigned: 0, rejected: [] as string[], unverifiable: [] as string[], distrusted: [] as string[], changedMeanwhile: 0 };
  for (let after = ''; ; ) {
    const { rows } = await pool.query<ClaimRow & { version: string }>(sql.claims.notSignedBy, [after, signingSecretId, batch]);
    if (rows.length === 0) return report;
    after = rows[rows.length - 1]!.key;
    const moved: typeof rows = [];
    for (const row of rows) {
      const verdict = row.secret_id !== null && distrust.has(row.secret_id) ? 'distrusted' : toClaim(row, signer).authenticity;
      if (verdict === 'verified' || verdict === 'not-checked') moved.push(row);
      else report[verdict].push(row.key);
    }
    const macs = moved.map((row) => signer.sign(signedFieldsOf(row)).mac);
    // A row changed since it was read (another row version: a worker settled or renewed it) is left alone.
    const { rowCount } = await pool.query(sql.claims.resign, [moved.map((row) => row.key), moved.map((row) => row.version), macs, signingSecretId]);
    report.resigned += rowCount ?? 0;
    report.changedMeanwhile += moved.length - (rowCount ?? 0);
  }
}
