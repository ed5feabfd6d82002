/**
 * Attack 12 (noted in passing): `show` checks the recorded arguments against the claim's fingerprint
 * with the secret the row names, which is the one that last signed it. After `keys activate` signs the
 * rows anew, a claim keyed (and fingerprinted) with the earlier secret names the new one, and `show`
 * told the operator, in an incident, that the arguments "DO NOT match the claim's fingerprint: not the
 * arguments it was claimed with (the row was changed)": a tampering alarm for a row nobody touched.
 *
 * Expected: the arguments a claim was made with match its fingerprint after a rotation.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { ClaimOperations, PostgresClaimStore } from '../../src/index.js';
import type { StoreLogger } from '../../src/index.js';
import { DeploymentSecret, canonicalize, deriveCustomKey, keyedFormat } from '../../src/key/index.js';
import { useTestSchema } from '../support/schema.js';
import { claimRequest } from '../support/claims.js';

const schema = useTestSchema(import.meta.filename);
const OLD = 'the-secret-of-last-year-of-at-least-32-bytes-000';
const NEW = 'the-secret-rotated-to-of-at-least-32-bytes-111111';
const quiet: StoreLogger = { warn: () => undefined, error: () => undefined };

describe('show after keys activate', () => {
  it('finds the arguments a claim keyed with the earlier secret was made with matching its fingerprint', async () => {
    const { pool, name } = schema;
    await new ClaimOperations(pool, { schema: name, secret: OLD }).activateSecret({ reason: 'first secret', force: true });
    const old = keyedFormat(new DeploymentSecret(OLD));
    const args = [{ to: `+4915112345678`, text: randomUUID() }];
    const argsText = canonicalize(args, 'args');
    const worker = new PostgresClaimStore({ pool, schema: name, secret: OLD, logger: quiet });
    const request = claimRequest({
      key: deriveCustomKey({ namespace: 'default', activityType: 'sendSms', customKey: args[0]!.text }, old),
      fingerprint: old.fingerprint(argsText),
      activityType: 'sendSms',
      keyFormat: { version: 2, secretId: old.secretId },
    });
    const begun = await worker.begin(request, 60_000);
    expect(await worker.complete(begun.claim, defaultPayloadConverter.toPayload({ id: 'sms_1' }))).toBe(true);
    await worker.close();

    const operator = new ClaimOperations(pool, { schema: name, secret: NEW, previousSecrets: [OLD] });
    await operator.activateSecret({ reason: 'yearly rotation', force: true });
    const claim = await operator.show(request.key);
    expect(claim.authenticity).toBe('verified');
    expect(operator.argumentsMatch(claim, argsText), 'the arguments it was claimed with').toBe(true);
    expect(operator.argumentsMatch(claim, canonicalize([{ ...args[0], text: 'another' }], 'args')), 'other arguments').toBe(false);
    expect(new ClaimOperations(pool, { schema: name }).argumentsMatch(claim, argsText), 'a CLI without the secrets').toBe('unknown');
  });
});
