/**
 * Found in review: an activity hangs (a vendor that never answers on a half-open connection, no timeout of
 * its own, no heartbeat). Temporal times the attempt out and retries; the SDK never tells the
 * hung attempt (it does not heartbeat), so its process keeps renewing the claim's lease. Every
 * retry finds a live owner, waits, and ends in the retryable IdempotencyClaimBusy: with the
 * default retry policy the workflow retries forever, and nothing asks a person (a refusal as
 * orphaned would reach `resumable()` and the runbook).
 *
 * The claim knows its attempt's deadline (start-to-close plus a grace): past it, Temporal has
 * given up on that attempt, and the CLI already lets an operator decide without --force. The
 * right outcome: past the owner's deadline, a later attempt is refused as orphaned (the lease
 * keeper stops renewing a claim past its deadline, or the waiter judges it by the deadline),
 * so a person decides; never a busy loop with no end.
 */
import { describe, expect, it } from 'vitest';
import { idempotencyInterceptors } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { applicationFailureIn } from '../../dev/failures.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

describe('an owner that hangs past its attempt deadline', () => {
  it('ends in a refusal a person can act on, not IdempotencyClaimBusy forever', { timeout: 120_000 }, async () => {
    const taskQueue = uniqueName('tq');
    let unhang: () => void = () => undefined;
    const hung = new Promise<void>((resolve) => (unhang = resolve));
    let calls = 0;
    const activities = {
      callVendor: async () => {
        calls++;
        await hung; // the vendor never answers; the activity has no timeout and does not heartbeat
        return 'answered';
      },
    };
    const interceptors = { activity: idempotencyInterceptors({ store: schema.store }) };
    const outcome = await temporal.withWorker({ taskQueue, activities, interceptors, shutdownGraceTime: '1s' }, async () => {
      const handle = await temporal.client.workflow.start('callActivity', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'callVendor', args: [], startToCloseTimeoutMs: 3_000, maximumAttempts: 10_000 }],
      });
      // Past the attempt's deadline (3 s + 30 s grace) and a lease, a later attempt must have been refused.
      const settled = await Promise.race([
        handle.result().then(
          (value) => ({ returned: value }),
          (error: unknown) => ({ refused: applicationFailureIn(error)?.type ?? 'other failure' }),
        ),
        new Promise<{ still: 'retrying' }>((resolve) => setTimeout(() => resolve({ still: 'retrying' }), 75_000)),
      ]);
      unhang();
      if ('still' in settled) await handle.terminate('test over');
      return settled;
    });
    expect(calls).toBe(1);
    expect(outcome).toEqual({ refused: 'IdempotencyOrphanedClaim' });
  });
});
