/**
 * Attack 13: `keys retire` and `keys activate` check the secret they act on before they take the
 * claim admission lock, and never again under it (src/store/key-rotation.ts: retireSecret's
 * `inForce.secretId === secretId` check, and activateSecret's `retiredSecretIds.includes(secretId)`
 * check, both read outside `inTransaction(... lockClaimAdmission ...)`). Two operators at once: one
 * finishing a rotation (`keys retire OLD`, NEW in force) while another rolls it back
 * (`keys activate` with OLD as the CLI's secret). Both pass their checks, then queue on the lock;
 * whichever commits second leaves OLD both in force and retired. From then on every claim is signed
 * with OLD (the trigger demands it) and every outcome a worker writes asks signed_by_retired(OLD):
 * the call is made and its record is not written (complete() answers false), and the claim reads
 * as forged for every worker.
 *
 * Expected: one of the two commands is refused (or the one that commits second re-checks under the
 * lock), so the secret in force is never a retired one, and a worker's outcome is recorded.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it, inject } from 'vitest';
import { ClaimOperations, PostgresClaimStore } from '../../src/index.js';
import type { StoreLogger } from '../../src/index.js';
import { DeploymentSecret, deriveCustomKey } from '../../src/key/index.js';
import { useTestSchema } from '../support/schema.js';
import { claimRequest } from '../support/claims.js';
import { defaultPayloadConverter } from '@temporalio/common';

const schema = useTestSchema(import.meta.filename);
const OLD = 'the-secret-of-last-year-of-at-least-32-bytes-000';
const NEW = 'the-secret-rotated-to-of-at-least-32-bytes-111111';
const quiet: StoreLogger = { warn: () => undefined, error: () => undefined };

async function waitFor(check: () => Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function bounded<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms).unref()),
  ]);
}

describe('keys retire OLD and keys activate OLD (a rollback) at the same time', () => {
  it.each(['keys retire', 'keys activate'])('%s first in the queue: never leaves the secret in force retired; a worker still records its outcome', async (first) => {
    const { pool, name } = schema;
    const oldId = new DeploymentSecret(OLD).id;
    const newId = new DeploymentSecret(NEW).id;
    // Each case from a deployment before any secret.
    await pool.query(`TRUNCATE "${name}".claims`);
    await pool.query(`UPDATE "${name}".settings SET key_format = 1, secret_id = NULL, retired_secret_ids = '{}'`);
    await new ClaimOperations(pool, { schema: name, secret: OLD }).activateSecret({ reason: 'first secret', force: true });
    await new ClaimOperations(pool, { schema: name, secret: NEW, previousSecrets: [OLD] }).activateSecret({ reason: 'rotation', force: true });

    // Someone holds the admission lock for a moment (a claim in flight does, shared; here exclusively, to order the two).
    const holder = new pg.Client({ connectionString: inject('databaseUrl') });
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT pg_advisory_xact_lock(8273181, hashtext($1))', [`${name}/key-format`]);

    const finishing = new ClaimOperations(pool, { schema: name, secret: NEW, previousSecrets: [OLD] });
    const rollingBack = new ClaimOperations(pool, { schema: name, secret: OLD, previousSecrets: [NEW] });
    const startRetire = () => {
      const retire = finishing.retireSecret(oldId, { reason: 'rotation done' });
      retire.catch(() => undefined);
      return retire;
    };
    const startActivate = () => {
      const activate = rollingBack.activateSecret({ reason: 'roll back to OLD', force: true });
      activate.catch(() => undefined);
      return activate;
    };
    const waitingOnAdmission = async () => {
      const { rows } = await pool.query<{ n: number }>(
        `SELECT count(*)::integer AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = 8273181`,
      );
      return rows[0]!.n;
    };
    const firstStarted = first === 'keys retire' ? startRetire() : startActivate();
    await waitFor(async () => (await waitingOnAdmission()) >= 1, `${first} to wait on the admission lock`);
    const secondStarted = first === 'keys retire' ? startActivate() : startRetire();
    await waitFor(async () => (await waitingOnAdmission()) >= 2, 'the other to wait on the admission lock');
    const [retire, activate] = first === 'keys retire' ? [firstStarted, secondStarted] : [secondStarted, firstStarted];
    await holder.query('COMMIT');
    await holder.end();
    const [retired, activated] = await bounded(Promise.allSettled([retire, activate]), 30_000, 'retire and activate');

    const settings = (
      await pool.query<{ secret_id: string; retired_secret_ids: string[] }>(`SELECT secret_id, retired_secret_ids FROM "${name}".settings`)
    ).rows[0]!;
    const inForce = settings.secret_id === oldId ? 'OLD' : settings.secret_id === newId ? 'NEW' : settings.secret_id;

    // A worker holding both secrets claims, makes its call, and records the result.
    const worker = new PostgresClaimStore({ pool, schema: name, secret: settings.secret_id === oldId ? OLD : NEW, previousSecrets: [OLD, NEW], logger: quiet });
    const formats = await worker.keyFormats();
    const format = formats.inForce;
    const request = claimRequest({
      key: deriveCustomKey({ namespace: 'default', activityType: 'chargeCard', customKey: randomUUID() }, format),
      keyFormat: { version: 2, secretId: settings.secret_id },
    });
    const begun = await worker.begin(request, 60_000);
    expect(begun.won).toBe(true);
    const recorded = await worker.complete(begun.claim, defaultPayloadConverter.toPayload({ id: 'ch_1' }));
    const read = await new PostgresClaimStore({ pool, schema: name, secret: NEW, previousSecrets: [OLD], logger: quiet }).get(request.key);

    expect(
      {
        inForceIsRetired: settings.retired_secret_ids.includes(settings.secret_id),
        recorded,
        readAs: `${read?.state}/${read?.authenticity}`,
      },
      `retire: ${retired.status}, activate: ${activated.status}; in force afterwards: ${inForce}, retired: ${settings.retired_secret_ids
        .map((id) => (id === oldId ? 'OLD' : id === newId ? 'NEW' : id))
        .join(',')}`,
    ).toEqual({ inForceIsRetired: false, recorded: true, readAs: 'completed/verified' });
    await worker.close();
  });
});
