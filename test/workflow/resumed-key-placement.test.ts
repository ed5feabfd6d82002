/**
 * Found in review: the refused call's key, carried to "the first activity of the refused type that the
 * closure schedules", lands on an action that already completed.
 *
 * A closure sends a reminder, then a confirmation (two different actions, distinguishing
 * arguments, as the README recommends for workflow scope). The confirmation is refused; the
 * operator finds nothing at the vendor and releases it. On the re-call the *reminder* gets the
 * confirmation's key, and because a resumed call skips the fingerprint check (arguments may be
 * rebuilt), it runs again for real under that key: the customer gets the reminder twice. The
 * confirmation then finds its key completed (by the reminder) with other arguments and is refused
 * as IdempotencyKeyReuse, blaming a custom key() nobody configured: it is never sent. (After a
 * `resolve` instead, the reminder is answered with the confirmation's resolved result.) Without
 * the header, workflow scope would have answered the reminder from its own record and run the
 * confirmation once.
 */
import { describe, expect, inject, it } from 'vitest';
import { OutcomeUnknownError, idempotencyInterceptors } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { runCli } from '../support/cli.js';
import { waitingOn } from '../support/pending-refusal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

describe('resumable() around two actions of one type', () => {
  it('after `release`, neither repeats the completed action nor answers the released one with its receipt', async () => {
    const taskQueue = uniqueName('tq');
    const sent: string[] = [];
    let confirmAttempts = 0;
    const activities = {
      sendSms: async (sms: { to: string; text: string }) => {
        if (sms.text === 'confirm' && ++confirmAttempts === 1) throw new OutcomeUnknownError('gateway timeout before sending');
        sent.push(sms.text);
        return { id: `sms_${sent.length}`, text: sms.text };
      },
    };
    const interceptors = { activity: idempotencyInterceptors({ store: schema.store }) };
    const result = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      const handle = await temporal.client.workflow.start('resumableTwoActions', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'sendSms', first: { to: '+4930123', text: 'reminder' }, second: { to: '+4930123', text: 'confirm' } }],
      });
      const { key } = await waitingOn(handle);
      expect(sent).toEqual(['reminder']); // the operator checks the gateway: the confirmation never went out
      const released = await runCli(['release', key, '--schema', schema.name], { TEMPORAL_ADDRESS: inject('temporalAddress') });
      expect(released.code).toBe(0);
      return handle.result().catch((error: unknown) => ({ failedWith: (error as { cause?: { cause?: { type?: string } } }).cause?.cause?.type }));
    });
    // Fails today: sent is ['reminder', 'reminder'] (the reminder ran again under the confirmation's key), and the
    // confirmation is then refused as IdempotencyKeyReuse ("the activity's custom key() maps different arguments"),
    // though no custom key is configured: it is never sent.
    expect(sent).toEqual(['reminder', 'confirm']);
    expect(result).toEqual([
      { id: 'sms_1', text: 'reminder' },
      { id: 'sms_2', text: 'confirm' },
    ]);
  });

  it('finds the refused call\'s place when the closure rethrows the refusal without its ActivityFailure', async () => {
    const taskQueue = uniqueName('tq');
    const sent: string[] = [];
    let confirmAttempts = 0;
    const activities = {
      sendSms: async (sms: { to: string; text: string }) => {
        sent.push(sms.text);
        if (sms.text === 'confirm' && ++confirmAttempts === 1) throw new OutcomeUnknownError('gateway timeout after sending');
        return { id: `sms_${sent.length}`, text: sms.text };
      },
    };
    const interceptors = { activity: idempotencyInterceptors({ store: schema.store }) };
    const result = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      const handle = await temporal.client.workflow.start('resumableTwoActionsRethrowingCause', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'sendSms', first: { to: '+4930123', text: 'reminder' }, second: { to: '+4930123', text: 'confirm' } }],
      });
      const { key } = await waitingOn(handle);
      const resolved = await runCli(['resolve', key, '--result', '{"id":"sms_by_hand","text":"confirm"}', '--schema', schema.name], {
        TEMPORAL_ADDRESS: inject('temporalAddress'),
      });
      expect(resolved.code).toBe(0);
      return handle.result();
    });
    // Without the refused activity's id in the refusal's details, the reminder (first of the type) took the
    // confirmation's place, and was refused as resumed-arguments-changed.
    expect(result).toEqual([
      { id: 'sms_1', text: 'reminder' },
      { id: 'sms_by_hand', text: 'confirm' },
    ]);
    expect(sent).toEqual(['reminder', 'confirm']);
  });
});
