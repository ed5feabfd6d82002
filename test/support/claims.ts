/** Claim requests for store-level tests, each for a fresh key. */
import { randomUUID } from 'node:crypto';
import type { ClaimRequest } from '../../src/index.js';
import { deriveCustomKey } from '../../src/key/index.js';
import type { KeyFormat } from '../../src/key/index.js';

export function claimRequest(overrides: Partial<ClaimRequest> = {}): ClaimRequest {
  return {
    key: randomUUID().replace(/-/g, ''),
    fingerprint: 'fp-1',
    namespace: 'default',
    activityType: 'chargeCard',
    workflowId: `wf-${randomUUID()}`,
    runId: 'run-1',
    activityId: '1',
    attempt: 1,
    claimedBy: 'test-host/1',
    deadlineMs: null,
    keyFormat: { version: 1, secretId: null },
    previousKeys: [],
    ...overrides,
  };
}

/**
 * A request for a claim keyed with `format`, as a worker keys a custom key (`customKey`, fresh by
 * default), for tests across key rotations. `overrides` may set any other field.
 */
export function keyedClaimRequest(
  format: Pick<KeyFormat, 'version' | 'secretId' | 'hash'>,
  overrides: Partial<ClaimRequest> & { customKey?: string } = {},
): ClaimRequest {
  const { customKey = randomUUID(), ...fields } = overrides;
  const activityType = fields.activityType ?? 'placeCall';
  return claimRequest({
    key: deriveCustomKey({ namespace: 'default', activityType, customKey }, format as KeyFormat),
    activityType,
    keyFormat: { version: format.version, secretId: format.secretId },
    ...fields,
  });
}
