/**
 * What every store cycle claims: a new random key (like the interceptor's
 * sha256 hex) and the fields a real activity would record, so the store, the
 * raw-SQL baseline and pgbench write rows of the same shape.
 */
import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import type { Payload } from '@temporalio/common';
import type { ClaimRequest } from '../src/index.js';

export const LEASE_MS = 30_000;

/** A small, typical activity result. */
export const RESULT: Payload = defaultPayloadConverter.toPayload({ chargeId: 'ch_3NqXyZ2eZvKYlo2C', status: 'succeeded' });

/** The same result as the `jsonb` the store writes: fields in base64, built here without library code. */
export const RESULT_JSON = {
  metadata: Object.fromEntries(
    Object.entries(RESULT.metadata ?? {}).map(([name, value]) => [name, Buffer.from(value).toString('base64')]),
  ),
  data: Buffer.from(RESULT.data ?? new Uint8Array()).toString('base64'),
};

const FINGERPRINT = randomBytes(32).toString('hex');
const RUN_ID = '6b1f7c3e-2d4a-4c1e-9a51-0f3a9d2b8e71';

let sequence = 0;

export function nextClaimRequest(): ClaimRequest {
  sequence++;
  return {
    key: randomBytes(32).toString('hex'),
    fingerprint: FINGERPRINT,
    namespace: 'default',
    activityType: 'chargeCard',
    workflowId: 'bench-workflow',
    runId: RUN_ID,
    activityId: String(sequence),
    attempt: 1,
    claimedBy: `bench/${process.pid}`,
    deadlineMs: null,
  };
}
