/**
 * Attack 12: an operator's resolve (`ClaimOperations.change`, src/store/claim-operations.ts) reads
 * the key format in force first, then locks the claim's row (`SELECT … FOR UPDATE`), and signs the
 * record with the format it read first. It takes no part of the claim admission lock, and its UPDATE
 * neither fires the admission trigger (it does not change the token) nor asks signed_by_retired().
 * Now that every transaction is READ COMMITTED (41fc12e), the row read after the wait is the newest,
 * but the format is still the one read before it. `keys activate --compromised OLD` commits while the
 * resolve waits for the row (a lease renewal, a worker's record, anything holding it a moment): it
 * does not touch the row (OLD signed it: distrusted, left as it is) and retires OLD in the same
 * transaction. The resolve then goes on, signs the operator's result with OLD (now retired, leaked)
 * and reports success: every worker refuses the record (IdempotencyRecordRejected), `resume` says it
 * does not authenticate, and the workflow waits on a decision that was made.
 *
 * Expected: a resolve that reports success leaves a record the workers accept (or it is refused).
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { ClaimOperations, PostgresClaimStore } from '../../src/index.js';
import type { StoreLogger } from '../../src/index.js';
import { DeploymentSecret, deriveCustomKey, keyedFormat } from '../../src/key/index.js';
import { useTestSchema } from '../support/schema.js';
import { claimRequest } from '../support/claims.js';

const schema = useTestSchema(import.meta.filename);
const OLD = 'the-secret-that-leaked-of-at-least-32-bytes-000000';
const NEW = 'the-secret-rotated-to-of-at-least-32-bytes-111111';
const quiet: StoreLogger = { warn: () => undefined, error: () => undefined };

async function until(query: () => Promise<boolean>): Promise<boolean> {
  for (let i = 0; i < 200; i++) {
    if (await query()) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return false;
}

describe('resolve waiting for the row while keys activate --compromised commits', () => {
  it('the resolved record is one the workers accept', async () => {
    const { pool, name } = schema;
    await new ClaimOperations(pool, { schema: name, secret: OLD }).activateSecret({ reason: 'first secret', force: true });
    const old = keyedFormat(new DeploymentSecret(OLD));
    const worker = new PostgresClaimStore({ pool, schema: name, secret: OLD, logger: quiet });
    const request = claimRequest({
      key: deriveCustomKey({ namespace: 'default', activityType: 'chargeCard', customKey: randomUUID() }, old),
      activityType: 'chargeCard',
      keyFormat: { version: 2, secretId: old.secretId },
    });
    const begun = await worker.begin(request, 60_000);
    expect(begun.won).toBe(true);
    // The charge's outcome is not known: a person checks the vendor and resolves it.
    expect(await worker.markUnknown(begun.claim, { summary: 'connection reset after the request was sent', detail: null })).toBe(true);

    // The CLI has the rotation's settings (NEW, with OLD as previous), as the runbook prepares them.
    const operator = new ClaimOperations(pool, { schema: name, secret: NEW, previousSecrets: [OLD] });

    // Something holds the row for a moment (a worker's statement on it; here, a transaction that touched it).
    const holder = await pool.connect();
    await holder.query('BEGIN');
    await holder.query(`UPDATE "${name}".claims SET awaited = true WHERE key = $1`, [request.key]);
    const resolving = operator
      .resolve(request.key, defaultPayloadConverter.toPayload({ chargeId: 'ch_1', status: 'succeeded' }), { force: false, reason: 'checked Stripe: charged' })
      .then(
        () => 'resolved',
        (error: Error) => `refused: ${error.message}`,
      );
    expect(
      await until(async () => {
        const { rows } = await pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE%'`,
        );
        return rows[0]!.n > 0;
      }),
      'the resolve waits for the row',
    ).toBe(true);

    // The leak is found: rotate away from OLD, naming it compromised (it is retired in the same transaction).
    const report = await operator.activateSecret({ reason: 'OLD leaked', force: true, compromised: [old.secretId!] });
    expect(report.distrusted).toContain(request.key);
    await holder.query('COMMIT');
    holder.release();
    const resolved = await resolving;

    const fresh = new PostgresClaimStore({ pool, schema: name, secret: NEW, previousSecrets: [OLD], logger: quiet });
    const read = await fresh.get(request.key);
    const outcome = resolved === 'resolved' ? { resolved, state: read?.state, authenticity: read?.authenticity } : { resolved: 'refused' };
    expect(
      [
        { resolved: 'resolved', state: 'completed', authenticity: 'verified' },
        { resolved: 'refused' },
      ],
      `the operator was told ${resolved}; the workers read ${read?.state}, ${read?.authenticity}`,
    ).toContainEqual(outcome);
    await Promise.all([worker.close(), fresh.close()]);
  });
});
