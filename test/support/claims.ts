/** Claim requests for store-level tests, each for a fresh key. */
import { randomUUID } from 'node:crypto';
import type { ClaimRequest } from '../../src/index.js';

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
    ...overrides,
  };
}
