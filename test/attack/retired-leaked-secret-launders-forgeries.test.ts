/**
 * Attack on the rotation (`keys activate`, `keys retire`) as the response to a
 * leaked secret, which SECURITY.md prescribes ("after a leak, retire it": a
 * row the retired secret signs is refused from then on).
 *
 * Whoever holds the leaked secret and can write the claims table (a
 * compromised worker host) plants, before the rotation, a `completed` row for
 * an action that has not happened yet: key, fingerprint and MAC all under the
 * leaked secret. The operator rotates: the workers get the new secret (the old
 * one in previousSecrets, to find old keys), `keys activate` puts the new one
 * in force, `keys retire` retires the leaked one. Both passes re-sign every row
 * the leaked secret's MAC verifies, the planted one included, with the new
 * secret. When the action is finally called, the worker finds the planted row
 * under the action's old-format key, it verifies, and the forged receipt is
 * returned: the charge never happens.
 *
 * The right outcome: after a rotation away from a leaked secret, no row that
 * secret signed is obeyed (refused, for a person to check: never a forged
 * receipt). Re-signing is only sound for a routine rotation, where the old
 * secret is trusted; after a leak, `keys activate --compromised <id>` signs
 * none of its rows again and retires it in the same step.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { ClaimOperations, PostgresClaimStore, idempotencyInterceptors } from '../../src/index.js';
import { DeploymentSecret, canonicalize, deriveCustomKey, keyedFormat } from '../../src/key/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { claimRequest } from '../support/claims.js';
import { applicationFailureIn } from '../../dev/failures.js';
import { runCli } from '../support/cli.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const LEAKED = 'the-secret-that-leaked-of-at-least-32-bytes-000';
const NEW_SECRET = 'the-secret-rotated-to-of-at-least-32-bytes-111';

describe('rotating away from a leaked secret', () => {
  it('obeys no row the leaked secret signed before the rotation (a planted receipt for a future charge)', async () => {
    const { pool, name } = schema;
    // The deployment runs with the secret that will leak.
    await new ClaimOperations(pool, { schema: name, secret: LEAKED }).activateSecret({ reason: 'first secret', force: true });

    // The attacker: the leaked secret and write access. A completed row for order-42, which nobody has charged yet.
    const order = `order-${randomUUID()}`;
    const args = [{ order }];
    const leaked = keyedFormat(new DeploymentSecret(LEAKED));
    const forger = new PostgresClaimStore({ pool, schema: name, secret: LEAKED });
    const planted = await forger.begin(
      claimRequest({
        key: deriveCustomKey({ namespace: 'default', activityType: 'charge', customKey: order }, leaked),
        fingerprint: leaked.fingerprint(canonicalize(args, 'args')),
        activityType: 'charge',
        keyFormat: { version: 2, secretId: leaked.secretId },
      }),
      60_000,
    );
    expect(planted.won).toBe(true);
    await forger.complete(planted.claim, defaultPayloadConverter.toPayload({ charged: order, receipt: 'forged' }));

    // The leak is noticed: roll the new secret out and activate it naming the leaked one compromised (SECURITY.md),
    // then, as after any rotation, retire the leaked one: neither step may vouch for the planted row.
    const asOperator = { TEMPORAL_IDEMPOTENCY_SECRET: NEW_SECRET };
    const blank = await runCli(['keys', 'activate', '--compromised', ' ', '--schema', name], asOperator);
    expect(blank).toMatchObject({ code: 2, stderr: expect.stringMatching(/--compromised needs a secret id/) });
    const activated = await runCli(
      ['keys', 'activate', '--json', '--force', '--reason', 'leak: rotate', '--compromised', leaked.secretId!, '--schema', name],
      asOperator,
    );
    expect(activated.code, activated.stderr).toBe(0);
    expect(JSON.parse(activated.stdout)).toMatchObject({ retired_as_compromised: [leaked.secretId], distrusted_rows: [planted.claim.key] });
    expect(activated.stderr).toMatch(/1 row\(s\) signed by a compromised secret were left as they were/);
    const operator = new ClaimOperations(pool, { schema: name, secret: NEW_SECRET, previousSecrets: [LEAKED] });
    await operator.retireSecret(leaked.secretId!, { reason: 'leak: retire' });

    // Later, the workflow charges order-42 for real.
    const charged: string[] = [];
    const store = new PostgresClaimStore({ pool, schema: name, secret: NEW_SECRET, previousSecrets: [LEAKED] });
    const activities = {
      charge: async (input: { order: string }) => {
        charged.push(input.order);
        return { charged: input.order, receipt: 'genuine' };
      },
    };
    const byOrder = { key: ({ args: callArgs }: { args: readonly unknown[] }) => (callArgs[0] as { order: string }).order };
    const taskQueue = uniqueName('tq');
    const outcome = await temporal
      .withWorker({ taskQueue, activities, interceptors: { activity: idempotencyInterceptors({ store, activities: { charge: byOrder } }) } }, () =>
        temporal.client.workflow.execute('callActivity', {
          taskQueue,
          workflowId: uniqueName('wf'),
          args: [{ activity: 'charge', args, maximumAttempts: 1 }],
        }),
      )
      .then(
        (returned) => ({ returned }),
        (error: unknown) => ({ refused: applicationFailureIn(error)?.type }),
      );

    // Either the charge runs (and its real receipt comes back) or it is refused for a person to check: never the forgery.
    expect(outcome).not.toEqual({ returned: [{ charged: order, receipt: 'forged' }] });
    // The planted row is found under the action's old key and refused: a person checks the vendor.
    expect(outcome).toEqual({ refused: 'IdempotencyRecordRejected' });
    expect(charged).toEqual([]);
  });
});
