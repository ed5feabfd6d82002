/**
 * Attack 13: the privilege check added for attack 12 (src/store/worker-privileges.ts) covers
 * claims and signed_by_retired() only. A worker role whose grants were given before migration 10
 * (a DBA who ran `temporal-idempotency grants` once, the very case 58b3cb1 names for migration 11)
 * has nothing on `<schema>.workers`: the store claims and records normally, and its note in the
 * worker registry fails with a warning a minute (postgres-claim-store.ts noteWorker, `.catch`).
 * The registry is what `keys activate` reads to refuse while a worker lacks the secret in force
 * (key-rotation.ts assertWorkersHold); with it empty, the check passes for every worker.
 *
 * The case it exists for: a worker rolled out with only the NEW secret (previousSecrets forgotten)
 * while OLD is in force cannot claim (KeyFormatUnavailable) and notes itself so that activation
 * refuses. Without the grant nothing is noted, `keys activate` succeeds without --force, and that
 * worker, which cannot find claims keyed with OLD, claims and runs again a call already recorded.
 *
 * Expected: the store refuses to claim, naming the missing privilege on the registry (as it does for
 * claims), or `keys activate` refuses: the recorded call is not claimed again.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { defaultPayloadConverter } from '@temporalio/common';
import { describe, expect, it, inject } from 'vitest';
import { ClaimOperations, PostgresClaimStore, grantStatements } from '../../src/index.js';
import type { ClaimRequest, StoreLogger } from '../../src/index.js';
import { deriveCustomKey } from '../../src/key/index.js';
import type { KeyFormat } from '../../src/key/index.js';
import { useTestSchema } from '../support/schema.js';

const schema = useTestSchema(import.meta.filename);
const OLD = 'the-secret-of-last-year-of-at-least-32-bytes-000';
const NEW = 'the-secret-rotated-to-of-at-least-32-bytes-111111';
const quiet: StoreLogger = { warn: () => undefined, error: () => undefined };

function requestFor(call: string, formats: { inForce: KeyFormat; previous: readonly KeyFormat[] }, claimedBy: string): ClaimRequest {
  const keyOf = (format: KeyFormat) => deriveCustomKey({ namespace: 'default', activityType: 'chargeCard', customKey: call }, format);
  return {
    key: keyOf(formats.inForce),
    fingerprint: formats.inForce.fingerprint('"args"'),
    keyFormat: { version: formats.inForce.version, secretId: formats.inForce.secretId },
    previousKeys: formats.previous.map((format) => ({ key: keyOf(format), fingerprint: format.fingerprint('"args"') })),
    namespace: 'default',
    activityType: 'chargeCard',
    workflowId: 'wf-charge',
    runId: 'run-1',
    activityId: '1',
    attempt: 1,
    claimedBy,
    deadlineMs: null,
  };
}

describe('a worker role without grants on the worker registry (given before migration 10)', () => {
  it('does not let keys activate through while a worker lacks the secret in force', async () => {
    const { pool, name } = schema;
    const role = `w13_${randomBytes(4).toString('hex')}`;
    await pool.query(`CREATE ROLE ${role} LOGIN PASSWORD 'pw'`);
    const workerPool = new pg.Pool({
      connectionString: inject('databaseUrl').replace(/\/\/[^@]*@/, `//${role}:pw@`),
      max: 4,
    });
    workerPool.on('error', () => undefined);
    try {
      for (const statement of grantStatements({ worker: role }, name)) await pool.query(statement);
      // As the grants stood before migration 10 added the registry.
      await pool.query(`REVOKE ALL ON "${name}".workers FROM ${role}`);

      await new ClaimOperations(pool, { schema: name, secret: OLD }).activateSecret({ reason: 'first secret', force: true });

      // A worker with OLD makes the charge and records it.
      const good = new PostgresClaimStore({ pool: workerPool, schema: name, secret: OLD, logger: quiet });
      const goodFormats = await good.keyFormats('good-host/1').catch((error: Error) => error);
      if (goodFormats instanceof Error) {
        // Fixed by the privilege check: the store names what is missing before any claim.
        expect(goodFormats.name).toBe('StorePrivilegesMissingError');
        expect(goodFormats.message).toContain('workers');
        return;
      }
      const first = requestFor('charge-42', goodFormats, 'good-host/1');
      const begun = await good.begin(first, 60_000);
      expect(begun.won).toBe(true);
      expect(await good.complete(begun.claim, defaultPayloadConverter.toPayload({ id: 'ch_42' }))).toBe(true);

      // A worker rolled out with NEW only (its previousSecrets forgotten): it cannot claim while OLD is in force.
      const misconfigured = new PostgresClaimStore({ pool: workerPool, schema: name, secret: NEW, logger: quiet });
      const refused = await misconfigured.keyFormats('new-host/1').then(
        () => 'claimed',
        (error: Error) => error.name,
      );

      // The rotation: every worker seen lately must hold NEW and OLD, or this is refused.
      const activation = await new ClaimOperations(pool, { schema: name, secret: NEW, previousSecrets: [OLD] })
        .activateSecret({ reason: 'rotation' })
        .then(
          () => 'activated',
          (error: Error & { reason?: string }) => `refused (${error.name})`,
        );

      // The misconfigured worker retries the charge.
      let again = 'no claim';
      if (activation === 'activated') {
        const retry = requestFor('charge-42', await misconfigured.keyFormats('new-host/1'), 'new-host/1');
        const second = await misconfigured.begin(retry, 60_000).catch((error: Error) => error);
        again = second instanceof Error ? second.name : second.won ? 'won: the charge runs again' : `found ${second.claim.state}`;
      }
      const noted = (await pool.query<{ n: number }>(`SELECT count(*)::integer AS n FROM "${name}".workers`)).rows[0]!.n;

      expect(refused).toBe('KeyFormatUnavailableError');
      expect(again, `workers noted in the registry: ${noted}; keys activate: ${activation}`).toBe('no claim');
      await Promise.all([good.close(), misconfigured.close()]);
    } finally {
      await workerPool.end();
      await pool.query(`DROP OWNED BY ${role}`).catch(() => undefined);
      await pool.query(`DROP ROLE ${role}`).catch(() => undefined);
    }
  });
});
