/**
 * Matching a refusal in workflow code, on the real server: a workflow catches
 * each ActivityFailure and branches with `isIdempotencyRefusal` and
 * `idempotencyRefusalOf` from the sandbox-safe `temporal-idempotency/workflow`
 * entry (bundled into the test workflows), as the README shows.
 */
import { describe, expect, it } from 'vitest';
import { ApplicationFailure } from '@temporalio/common';
import {
  IdempotencyInvalidKeyInput,
  IdempotencyKeyReuse,
  IdempotencyOrphanedClaim,
  OutcomeUnknownError,
  idempotencyInterceptors,
} from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import type { RefusalBranch } from '../support/workflows.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

describe('isIdempotencyRefusal and idempotencyRefusalOf in a workflow', () => {
  it('tell an orphaned claim, a reused key and another refusal apart, and leave the activity’s own failures alone', async () => {
    const order = uniqueName('order');
    const calls = { dial: 0, charge: 0, lookUp: 0, decline: 0 };
    const activities = {
      dial: async () => {
        calls.dial++;
        throw new OutcomeUnknownError('the line dropped after the vendor took the call');
      },
      charge: async (request: { order: string; cents: number }) => (calls.charge++, { id: `ch_${request.cents}` }),
      lookUp: async () => (calls.lookUp++, 'status'),
      decline: async () => {
        calls.decline++;
        throw ApplicationFailure.nonRetryable('card declined', 'CardDeclined');
      },
    };
    const interceptors = {
      activity: idempotencyInterceptors({
        store: schema.store,
        activities: {
          // One key per order: a second charge of the same order with another amount is a reused key.
          charge: { key: ({ args }) => (args[0] as { order: string }).order },
          // A forgotten `return`: no stable form to key on (refused before any claim, so its details name no key).
          lookUp: { keyArgs: () => undefined },
        },
      }),
    };
    const taskQueue = uniqueName('tq');
    const workflowId = uniqueName('wf');
    const branches = await temporal.withWorker({ taskQueue, activities, interceptors }, () =>
      temporal.client.workflow.execute('branchOnRefusal', {
        taskQueue,
        workflowId,
        args: [
          {
            calls: [
              { activity: 'dial', args: [] },
              { activity: 'charge', args: [{ order, cents: 100 }] },
              { activity: 'charge', args: [{ order, cents: 990_000 }] },
              { activity: 'lookUp', args: [] },
              { activity: 'decline', args: [] },
            ],
          },
        ],
      }),
    );
    const { rows } = await schema.pool.query<{ activity_type: string; key: string }>(
      `SELECT activity_type, key FROM "${schema.name}".claims WHERE workflow_id = $1`,
      [workflowId],
    );
    const keyOf = (activityType: string) => rows.find((row) => row.activity_type === activityType)?.key;
    const dialKey = keyOf('dial');
    const chargeKey = keyOf('charge');
    expect(rows.map((row) => row.activity_type).sort()).toEqual(['charge', 'dial']) // the declined call's claim was released: a definite failure;
    expect(branches).toEqual<RefusalBranch[]>([
      { branch: 'ask a person', type: IdempotencyOrphanedClaim, nonRetryable: true, key: dialKey ?? 'no dial claim', causeType: IdempotencyOrphanedClaim, isRefusal: true },
      { branch: 'completed', type: null, nonRetryable: null, key: null, causeType: null, isRefusal: false },
      { branch: 'fix the key', type: IdempotencyKeyReuse, nonRetryable: true, key: chargeKey ?? 'no charge claim', causeType: IdempotencyKeyReuse, isRefusal: true },
      { branch: 'other refusal', type: IdempotencyInvalidKeyInput, nonRetryable: true, key: null, causeType: IdempotencyInvalidKeyInput, isRefusal: true },
      { branch: 'not a refusal', type: null, nonRetryable: null, key: null, causeType: null, isRefusal: false },
    ]);
    // Each refused call was refused before (or instead of) a second run: the workflow saw the refusal, not a repeat.
    expect(calls).toEqual({ dial: 1, charge: 1, lookUp: 0, decline: 1 });
  });
});
