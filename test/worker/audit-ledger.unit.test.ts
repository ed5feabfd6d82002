/**
 * The audit ledger inside the idempotency interceptor (README "The audit
 * ledger"), when its own database fails: a start entry that cannot be appended
 * means the call is not made, and says so in the one way the outcome
 * classification cannot misread. No services.
 */
import { describe, expect, it } from 'vitest';
import { NotSentError } from '../../src/index.js';
import { Attempts, errorOf } from '../support/unit-attempts.js';

/** What `pg` rejects with when the ledger's connection is cut: on its own, a sign the vendor may have been reached. */
const connectionReset = () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', syscall: 'read' });

describe('the ledger cannot record the start of a call', () => {
  it('fails the attempt as not sent, without calling the activity, and releases the claim for the retry', async () => {
    const attempts = new Attempts({ audit: true });
    let calls = 0;
    const sendSms = async (_to: string) => `sent (call ${++calls})`;
    const reset = connectionReset();
    attempts.store.fail('recordStart', reset, 1);

    const failure = await errorOf(() => attempts.attempt('sendSms', 1).run(sendSms, '+15550001'));

    expect(failure).toBeInstanceOf(NotSentError);
    expect((failure as NotSentError).message).toBe('The audit ledger could not record the start of the call, so it was not made.');
    expect((failure as NotSentError).cause).toBe(reset);
    expect(calls).toBe(0);
    // Released, not kept `unknown`: the reset came from the ledger's database, not from the vendor.
    expect(await attempts.store.claims()).toEqual([]);
    expect(attempts.store.auditLedger().entries()).toEqual([]);

    await expect(attempts.attempt('sendSms', 2).run(sendSms, '+15550001')).resolves.toBe('sent (call 1)');
    expect(attempts.store.auditLedger().calls()).toMatchObject([{ activityType: 'sendSms', attempt: 2, outcome: 'completed' }]);
    expect(await attempts.store.onlyClaim()).toMatchObject({ state: 'completed', attempt: 2 });
  });
});
