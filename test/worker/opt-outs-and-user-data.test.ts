/**
 * Found in review: opt-outs and user data.
 *
 * - `guard: 'listed'` composed by hand (idempotencyInterceptors, as the README's second
 *   registration shows): a misspelled name under `activities` leaves the real write unguarded.
 *   The only sign is a warning that says it "runs with the worker's defaults", which under
 *   'listed' means no claim at all: a retry after an ambiguous error calls the vendor again.
 * - IdempotencyInvalidKeyInput names the path of the bad value, and the path is made of the
 *   object's own keys: a map keyed by phone number puts the phone number, in plain text, into the
 *   refusal message, which the SDK logs ("Activity failed") whatever the codec.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Client } from '@temporalio/client';

import { DefaultLogger, Worker, bundleWorkflowCode } from '@temporalio/worker';
import { IdempotencyInvalidKeyInput, OutcomeUnknownError, PostgresClaimStore, idempotencyInterceptors } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { applicationFailureIn } from '../../dev/failures.js';
import { loggedLines } from '../support/logs.js';
import { XorCodec } from '../support/codecs.js';
import { workflowInterceptorModules } from '../../dev/workflow-interceptors.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

describe("guard: 'listed' composed by hand", () => {
  it('a misspelled write is not left unguarded with only a warning', async () => {
    let writes = 0;
    const activities = {
      chargeCard: async () => {
        writes++;
        if (writes === 1) throw new OutcomeUnknownError('timed out after the vendor accepted the charge');
        return { id: `ch_${writes}` };
      },
    };
    const taskQueue = uniqueName('tq');
    const logsBefore = loggedLines().length;
    const interceptors = {
      activity: idempotencyInterceptors({ store: new PostgresClaimStore({ pool: schema.pool, schema: schema.name }), guard: 'listed', activities: { chargeCrad: {} } }),
    };
    const outcome = await temporal
      .withWorker({ taskQueue, activities, interceptors }, () =>
        temporal.client.workflow.execute('callActivity', { taskQueue, workflowId: uniqueName('wf'), args: [{ activity: 'chargeCard', args: [{ cents: 990_000 }] }] }),
      )
      .then(
        (returned) => ({ returned }),
        (error: unknown) => ({ failed: applicationFailureIn(error)?.type }),
      );
    const warnings = loggedLines()
      .slice(logsBefore)
      .map((entry) => entry.message)
      .filter((message) => message.includes('chargeCrad'));
    // It failed: the charge went out twice ({ returned: [{ id: 'ch_2' }] }) after a warning that said
    // "chargeCard runs with the worker's defaults", i.e. unguarded. Now it is refused before it runs.
    expect({ writes, outcome }, JSON.stringify(warnings)).toEqual({ writes: 0, outcome: { failed: 'IdempotencyConfiguration' } });
  });
});

describe('no user data in plain text, with a codec', () => {
  it('IdempotencyInvalidKeyInput does not put an object key (a phone number) into logs or history', async () => {
    const phone = '+4915112345678';
    const codec = new XorCodec();
    const failureConverterPath = fileURLToPath(new URL('../support/encoding-failure-converter.ts', import.meta.url));
    const bundle = await bundleWorkflowCode({
      workflowsPath: fileURLToPath(new URL('../support/workflows.ts', import.meta.url)),
      workflowInterceptorModules,
      failureConverterPath,
      logger: new DefaultLogger('WARN'),
    });
    const taskQueue = uniqueName('tq');
    const workflowId = uniqueName('wf');
    let sent = 0;
    type Batch = { recipients: Array<{ phone: string; cents: number; count: number }> };
    const worker = await Worker.create({
      connection: temporal.nativeConnection,
      taskQueue,
      workflowBundle: bundle,
      activities: { sendVouchers: async () => (sent++, { ok: true }) },
      dataConverter: { payloadCodecs: [codec], failureConverterPath },
      interceptors: {
        activity: idempotencyInterceptors({
          store: new PostgresClaimStore({ pool: schema.pool, schema: schema.name, secret: 'test-deployment-secret-of-at-least-32-bytes!' }),
          payloadCodecs: [codec],
          activities: {
            // The amount per voucher, per recipient: a recipient with no vouchers gives Infinity.
            sendVouchers: { keyArgs: (args) => Object.fromEntries((args[0] as Batch).recipients.map((r) => [r.phone, r.cents / r.count])) },
          },
        }),
      },
    });
    const client = new Client({
      connection: temporal.client.connection,
      dataConverter: { payloadCodecs: [codec], failureConverterPath },
    });
    const logsBefore = loggedLines().length;
    const failed = await worker
      .runUntil(
        client.workflow.execute('callActivity', {
          taskQueue,
          workflowId,
          args: [{ activity: 'sendVouchers', args: [{ recipients: [{ phone, cents: 500, count: 0 }] }] }],
        }),
      )
      .then(
        () => undefined,
        (error: unknown) => applicationFailureIn(error),
      );
    expect(failed?.type).toBe(IdempotencyInvalidKeyInput);
    expect(sent).toBe(0);
    const history = JSON.stringify(await temporal.client.workflow.getHandle(workflowId).fetchHistory());
    const logs = JSON.stringify(loggedLines().slice(logsBefore), (_, value: unknown) =>
      typeof value === 'bigint' ? String(value) : value instanceof Error ? { ...value, message: value.message, stack: value.stack } : value,
    );
    // Fails today: the SDK's "Activity failed" line carries the refusal's message, args["+4915112345678"].
    expect({ inLogs: logs.includes(phone), inHistory: history.includes(phone) }).toEqual({ inLogs: false, inHistory: false });
  });
});
