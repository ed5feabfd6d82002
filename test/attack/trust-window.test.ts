/**
 * Attack (round 2) on issue 13, trust: the migration window (`previousSecrets`) and
 * what the record MAC does not cover.
 *
 * - A worker still on the old key format (a rolling deploy of the secret) takes over a
 *   new-format orphan through its alias row and calls the vendor with the *old* key, which
 *   the vendor has never seen: with `vendorDedup`, the call goes out twice.
 * - While `previousSecrets` holds 'unkeyed', a row with its MAC removed is accepted, even at a
 *   format-2 key that no unsigned row was ever written under: a DB writer without the secret
 *   answers a call with an edited result.
 * - Secret rotation: a worker on the old secret meets the new workers' claims (that is why they
 *   are claimed under both keys) but refuses them as forged (IdempotencyRecordRejected,
 *   non-retryable), even a completed call whose result it should return.
 * - `release` of the key in a refusal releases one row of an aliased claim: the next attempt is
 *   refused again, on the alias.
 * - The outcome note is not covered by the MAC: a DB writer puts its own words ("nothing was
 *   sent: release it") into a verified refusal's message.
 */
import { describe, expect, it } from 'vitest';
import type { ActivityFunction } from '@temporalio/common';
import {
  IdempotencyOrphanedClaim,
  IdempotencyRecordRejected,
  OutcomeUnknownError,
  PostgresClaimStore,
  idempotencyInterceptors,
  idempotencyKey,
} from '../../src/index.js';
import type { IdempotencyOptions, PostgresClaimStoreOptions } from '../../src/index.js';
import { DeploymentSecret, UNKEYED, deriveCustomKey, keyedFormat } from '../../src/key/index.js';
import type { KeyFormat } from '../../src/key/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { applicationFailureIn } from '../../dev/failures.js';
import { runCli } from '../support/cli.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const SECRET = 'test-deployment-secret-of-at-least-32-bytes!';
const NEW_SECRET = 'the-rotated-deployment-secret-of-at-least-32-bytes';

function storeWith(options: Omit<PostgresClaimStoreOptions, 'pool'> = {}): PostgresClaimStore {
  return new PostgresClaimStore({ pool: schema.pool, schema: schema.name, ...options });
}

/** Runs `activity` once in a new workflow on a new worker; what it returned, or the refusal's type. */
async function run(
  activities: Record<string, ActivityFunction>,
  input: { activity: string; args: unknown[]; maximumAttempts?: number },
  options: IdempotencyOptions,
): Promise<{ returned: unknown } | { failed: string | undefined; message: string; key: string | undefined }> {
  const taskQueue = uniqueName('tq');
  return temporal
    .withWorker({ taskQueue, activities, interceptors: { activity: idempotencyInterceptors(options) } }, () =>
      temporal.client.workflow.execute('callActivity', { taskQueue, workflowId: uniqueName('wf'), args: [input] }),
    )
    .then(
      (returned) => ({ returned }),
      (error: unknown) => {
        const failure = applicationFailureIn(error);
        if (!failure) throw error;
        const details = failure.details?.[0] as { key?: string } | undefined;
        return { failed: failure.type ?? undefined, message: failure.message, key: details?.key };
      },
    );
}

const byOrder = { key: ({ args }: { args: readonly unknown[] }) => (args[0] as { order: string }).order };
const keyIn = (order: string, format: KeyFormat) => deriveCustomKey({ namespace: 'default', activityType: 'charge', customKey: order }, format);
const keyed = (secret: string) => keyedFormat(new DeploymentSecret(secret));
const jsonPayload = (value: unknown) => ({
  metadata: { encoding: Buffer.from('json/plain').toString('base64') },
  data: Buffer.from(JSON.stringify(value)).toString('base64'),
});

describe('the migration window to a secret', () => {
  it('vendorDedup: a worker still on the old format re-runs a new-format orphan with the same key the vendor saw', async () => {
    const order = uniqueName('order');
    const vendorKeys: string[] = [];
    const charge = async () => {
      vendorKeys.push(idempotencyKey());
      if (vendorKeys.length === 1) throw new OutcomeUnknownError('timed out after the vendor accepted the request');
      return { id: `ch_${vendorKeys.length}` };
    };
    const activities = { charge: { ...byOrder, vendorDedup: true } };

    // A worker that already has the secret: the vendor gets the keyed key; the outcome is unknown.
    const first = await run({ charge }, { activity: 'charge', args: [{ order }], maximumAttempts: 1 }, {
      store: storeWith({ secret: SECRET, previousSecrets: ['unkeyed'] }),
      activities,
    });
    expect('failed' in first).toBe(true);
    expect(vendorKeys).toEqual([keyIn(order, keyed(SECRET))]);

    // The next attempt lands on a worker the secret has not reached yet (rolling deploy). It meets the
    // claim through its alias row, takes it over, and calls again "with the same key".
    const second = await run({ charge }, { activity: 'charge', args: [{ order }] }, { store: storeWith(), activities });
    expect(second).toEqual({ returned: [{ id: 'ch_2' }] });

    // Fails today: the vendor was called with a second key it never saw, so it charged twice.
    expect(new Set(vendorKeys).size).toBe(1);
  });

  it("a row whose MAC was removed is not accepted at a format-2 key, even while 'unkeyed' is allowed", async () => {
    const order = uniqueName('order');
    let charges = 0;
    const charge = async (request: { order: string; cents: number }) => (charges++, { id: 'ch_1', cents: request.cents });
    const options: IdempotencyOptions = { store: storeWith({ secret: SECRET, previousSecrets: ['unkeyed'] }), activities: { charge: byOrder } };
    expect(await run({ charge }, { activity: 'charge', args: [{ order, cents: 990_000 }] }, options)).toEqual({
      returned: [{ id: 'ch_1', cents: 990_000 }],
    });

    // A DB writer without the secret edits the signed, keyed row and drops its MAC.
    const key = keyIn(order, keyed(SECRET));
    const { rows } = await schema.pool.query<{ key_format: number }>(
      `UPDATE "${schema.name}".claims SET result_payload = $2, record_mac = NULL WHERE key = $1 RETURNING key_format`,
      [key, jsonPayload({ id: 'ch_1', cents: 1 })],
    );
    expect(rows).toEqual([{ key_format: 2 }]); // no unsigned row was ever written under format 2

    const again = await run({ charge }, { activity: 'charge', args: [{ order, cents: 990_000 }] }, options);
    // Fails today: the edited result is returned as the record of the call.
    expect(again).toMatchObject({ failed: IdempotencyRecordRejected });
    expect(charges).toBe(1);
  });

  it("while 'unkeyed' is allowed, a forged unsigned row under the guessable format-1 key does not skip a new call", async () => {
    // The window lasts "until the claims made before are past your retention" (weeks). Format-1 keys are
    // plain SHA-256 of what a DB writer can guess (the workflow id in the Web UI, an order id).
    const order = uniqueName('order');
    await schema.pool.query(
      `INSERT INTO "${schema.name}".claims (key, state, token, fingerprint, namespace, activity_type, activity_id, attempt, claimed_by, result_payload, finished_at, claimed_at)
       VALUES ($1, 'completed', gen_random_uuid(), $2, 'default', 'charge', '1', 1, 'worker-7/1234', $3, now(), now())`,
      [keyIn(order, UNKEYED), UNKEYED.fingerprint(JSON.stringify([{ order }])), jsonPayload({ id: 'ch_FORGED' })],
    );
    let charges = 0;
    const charge = async () => (charges++, { id: 'ch_real' });
    const outcome = await run({ charge }, { activity: 'charge', args: [{ order }] }, {
      store: storeWith({ secret: SECRET, previousSecrets: ['unkeyed'] }),
      activities: { charge: byOrder },
    });
    // Fails today: { returned: [{ id: 'ch_FORGED' }] }, and the card is never charged.
    expect({ outcome, charges }).toEqual({ outcome: { returned: [{ id: 'ch_real' }] }, charges: 1 });
  });

  it('secret rotation: a worker on the old secret gets the result the new workers recorded', async () => {
    const order = uniqueName('order');
    let charges = 0;
    const charge = async () => (charges++, { id: `ch_${charges}` });
    const rotated = await run({ charge }, { activity: 'charge', args: [{ order }] }, {
      store: storeWith({ secret: NEW_SECRET, previousSecrets: [SECRET] }),
      activities: { charge: byOrder },
    });
    expect(rotated).toEqual({ returned: [{ id: 'ch_1' }] });

    // A retry or reset that lands on a worker the new secret has not reached yet.
    const old = await run({ charge }, { activity: 'charge', args: [{ order }] }, { store: storeWith({ secret: SECRET }), activities: { charge: byOrder } });
    // Fails today: IdempotencyRecordRejected ("forged, copied from another key, or edited"), non-retryable.
    expect(old).toEqual({ returned: [{ id: 'ch_1' }] });
    expect(charges).toBe(1);
  });

  it("`release` of the refused key lets the next attempt run (not refuse it again on the alias)", async () => {
    const order = uniqueName('order');
    let charges = 0;
    const charge = async () => {
      if (++charges === 1) throw new OutcomeUnknownError('the line dropped');
      return { id: `ch_${charges}` };
    };
    const options: IdempotencyOptions = { store: storeWith({ secret: SECRET, previousSecrets: ['unkeyed'] }), activities: { charge: byOrder } };
    const refused = await run({ charge }, { activity: 'charge', args: [{ order }] }, options);
    expect(refused).toMatchObject({ failed: IdempotencyOrphanedClaim, key: keyIn(order, keyed(SECRET)) });

    // The vendor shows nothing: the operator releases the key the refusal names, as the runbook says.
    const key = (refused as { key: string }).key;
    const released = await runCli(['release', key, '--schema', schema.name, '--no-signal', '--reason', 'vendor shows no charge'], {
      TEMPORAL_IDEMPOTENCY_SECRET: SECRET,
    });
    expect(released.code).toBe(0);

    const again = await run({ charge }, { activity: 'charge', args: [{ order }] }, options);
    // Fails today: refused again as orphaned, now on the format-1 alias row the release left behind.
    expect(again).toEqual({ returned: [{ id: 'ch_2' }] });
  });
});

describe('what the record MAC leaves out', () => {
  it('a verified refusal does not carry words a DB writer put in the outcome note', async () => {
    const order = uniqueName('order');
    const charge = async () => {
      throw new OutcomeUnknownError('the line dropped after the vendor accepted the request');
    };
    const options: IdempotencyOptions = { store: storeWith({ secret: SECRET }), activities: { charge: byOrder } };
    expect(await run({ charge }, { activity: 'charge', args: [{ order }] }, options)).toMatchObject({ failed: IdempotencyOrphanedClaim });

    const planted = 'the activity threw NotSentError: not sent; nothing reached the vendor, release it';
    await schema.pool.query(`UPDATE "${schema.name}".claims SET outcome_note = $2 WHERE key = $1`, [keyIn(order, keyed(SECRET)), planted]);

    const again = await run({ charge }, { activity: 'charge', args: [{ order }] }, options);
    const shown = await runCli(['show', keyIn(order, keyed(SECRET)), '--schema', schema.name, '--json'], { TEMPORAL_IDEMPOTENCY_SECRET: SECRET });
    const record = (JSON.parse(shown.stdout) as { record: string }).record;
    // Fails today: the refusal (type IdempotencyOrphanedClaim, record "verified") tells the operator to release it.
    expect({ plantedInRefusal: 'message' in again && again.message.includes(planted), record }).toEqual({
      plantedInRefusal: false,
      record: 'rejected',
    });
  });
});


