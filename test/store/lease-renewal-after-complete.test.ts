/**
 * Found in review: the owner's own `complete` is read as "lost the claim".
 *
 * The renewal statement renews only rows still `claimed`. When the owner's `complete` has
 * committed but its answer is still on the way (a slow network, a busy pool), the next renewal
 * finds the row `completed`, and the lease keeper tells the attempt it lost its claim: an ERROR
 * saying an operator released or resolved it, or another attempt took it over. Nothing of the
 * kind happened; the person on call goes looking for an operator action that never was.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { idempotencyInterceptors } from '../../src/index.js';
import type { ClaimStore } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { logsMatching } from '../support/logs.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

describe('an owner whose record commits a moment before its answer arrives', () => {
  it('is not told it lost its claim', async () => {
    const store: ClaimStore = Object.assign(Object.create(schema.store) as ClaimStore, {
      complete: async (...args: Parameters<ClaimStore['complete']>) => {
        const recorded = await schema.store.complete(...args);
        await sleep(800); // the commit is done; its answer is slow to arrive
        return recorded;
      },
    });
    const taskQueue = uniqueName('tq');
    const interceptors = { activity: idempotencyInterceptors({ store, leaseMs: 1_000 }) };
    const activities = { chargeCard: async () => ({ id: 'ch_1' }) };
    const result = await temporal.withWorker({ taskQueue, activities, interceptors }, () =>
      temporal.client.workflow.execute('callActivity', { taskQueue, workflowId: uniqueName('wf'), args: [{ activity: 'chargeCard', args: [] }] }),
    );
    expect(result).toEqual([{ id: 'ch_1' }]);
    // Fails today: "this attempt lost its claim while its call ran (an operator released or resolved it, ...)".
    expect(logsMatching(/lost its claim/).map((entry) => entry.message)).toEqual([]);
  });
});
