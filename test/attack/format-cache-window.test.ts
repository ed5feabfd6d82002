/**
 * Attack (round 3): the store trusts its last read of the key format in force for a second before
 * trusting an unsigned row. A worker that read an unsigned row (a no-secret worker's, during the
 * rollout) just before `keys activate` obeys an unsigned row forged just after it: `get` (what a
 * waiting attempt re-reads) returns the forged `completed` row as "not checked" rather than
 * rejected. Together with stale-format-forgery.test.ts: a worker's view of the format in force
 * lags the activation, and rows are judged by the lagging view.
 */
import { describe, expect, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { ClaimOperations, PostgresClaimStore } from '../../src/index.js';
import type { ClaimRequest } from '../../src/store/index.js';
import { payloadToJson } from '../../src/store/payload-json.js';
import { useTestSchema } from '../support/schema.js';

const schema = useTestSchema(import.meta.filename);
const SECRET = 'test-deployment-secret-of-at-least-32-bytes!';

function request(key: string): ClaimRequest {
  return {
    key,
    fingerprint: 'f',
    keyFormat: { version: 1, secretId: null },
    previousKeys: [],
    namespace: 'default',
    activityType: 'chargeCard',
    workflowId: 'wf',
    runId: null,
    activityId: '1',
    attempt: 1,
    claimedBy: 'host-a/1',
    deadlineMs: null,
  };
}

describe('the key format in force, as a worker last read it', () => {
  it('does not let an unsigned row forged right after the activation be obeyed', async () => {
    const key = 'c'.repeat(64);
    // A worker without the secret (rollout not finished) holds a claim: its row is unsigned.
    await new PostgresClaimStore({ pool: schema.pool, schema: schema.name }).begin(request(key), 60_000);
    const worker = new PostgresClaimStore({ pool: schema.pool, schema: schema.name, secret: SECRET, previousSecrets: ['unkeyed'] });
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect((await worker.get(key))?.authenticity).toBe('not-checked'); // read the format again: still 1

    await new ClaimOperations(schema.pool, { schema: schema.name, secret: SECRET }).activateSecret({ reason: 'rollout', force: true });
    // A writer without the secret: "completed", unsigned.
    const forged = payloadToJson(defaultPayloadConverter.toPayload({ id: 'ch_forged' }));
    await schema.pool.query(
      `UPDATE "${schema.name}".claims SET state = 'completed', result_payload = $2, record_mac = NULL, secret_id = NULL WHERE key = $1`,
      [key, forged],
    );
    const read = await worker.get(key);
    await worker.close();
    // Fails today: { state: 'completed', authenticity: 'not-checked' }: obeyed.
    expect({ state: read?.state, authenticity: read?.authenticity }).toEqual({ state: 'completed', authenticity: 'rejected' });
  });
});
