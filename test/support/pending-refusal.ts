/** Test support: wait until a workflow in `resumable()` reports the call it is waiting on. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { WorkflowHandle } from '@temporalio/client';
import { PENDING_REFUSALS_QUERY } from '../../src/operator-decision.js';
import type { PendingRefusal } from '../../src/workflow/index.js';

/** The first refused call the workflow waits on; throws after about 20 s without one. */
export async function waitingOn(handle: WorkflowHandle): Promise<PendingRefusal> {
  for (let i = 0; i < 200; i++) {
    const [pending] = await handle.query<PendingRefusal[]>(PENDING_REFUSALS_QUERY);
    if (pending) return pending;
    await sleep(100);
  }
  throw new Error('the workflow never reported a refused call');
}
