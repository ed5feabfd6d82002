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
 * Fixed by the resolve taking the claim admission lock shared before it reads the format: it waits
 * for an activation under way, then signs with the format that activation put in force. (A resolve
 * that commits before an activation starts is signed with OLD, and a compromised activation names it
 * among the rows it distrusts: as with any row OLD signed, the operator checks it again.)
 */
import { describe, expect, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { ClaimOperations, PostgresClaimStore } from '../../src/index.js';
import type { StoreLogger } from '../../src/index.js';
import { DeploymentSecret, keyedFormat } from '../../src/key/index.js';
import { useTestSchema } from '../support/schema.js';
import { keyedClaimRequest } from '../support/claims.js';

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
    const request = keyedClaimRequest(old, { activityType: 'chargeCard' });
    const begun = await worker.begin(request, 60_000);
    expect(begun.won).toBe(true);
    // The charge's outcome is not known: a person checks the vendor and resolves it.
    expect(await worker.markUnknown(begun.claim, { summary: 'connection reset after the request was sent', detail: null })).toBe(true);

    // The CLI has the rotation's settings (NEW, with OLD as previous), as the runbook prepares them.
    const operator = new ClaimOperations(pool, { schema: name, secret: NEW, previousSecrets: [OLD] });

    // A worker's statement in flight holds the claim admission lock shared (a claim, a record being written):
    // the activation waits for it, and the operator's resolve comes while the activation is under way.
    const waitingForAdmission = async (n: number) =>
      until(async () => {
        const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event = 'advisory'`);
        return rows[0]!.n >= n;
      });
    const holder = await pool.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT pg_advisory_xact_lock_shared(8273181, hashtext($1))', [`${name}/key-format`]);
    // The leak is found: rotate away from OLD, naming it compromised (it is retired in the same transaction).
    const activating = operator.activateSecret({ reason: 'OLD leaked', force: true, compromised: [old.secretId!] });
    expect(await waitingForAdmission(1), 'the activation waits for the statement in flight').toBe(true);
    const resolving = operator
      .resolve(request.key, defaultPayloadConverter.toPayload({ chargeId: 'ch_1', status: 'succeeded' }), { force: false, reason: 'checked Stripe: charged' })
      .then(
        () => 'resolved',
        (error: Error) => `refused: ${error.message}`,
      );
    // Before the fix the resolve did not wait: it read OLD as in force and signed with it while the activation ran.
    await waitingForAdmission(2);
    await holder.query('COMMIT');
    holder.release();
    const report = await activating;
    expect(report.distrusted).toContain(request.key);
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
