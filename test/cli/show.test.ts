/**
 * `show`, for the operator who checks the vendor: the arguments the call was
 * made with (kept encoded like the result), decoded with the workers' codecs,
 * checked against the claim's fingerprint, and both forms of the key.
 */
import { describe, expect, it } from 'vitest';
import { idempotencyInterceptors, keyToUuid } from '../../src/index.js';
import type { IdempotencyOptions } from '../../src/index.js';
import { XorCodec } from '../support/codecs.js';
import { runCli } from '../support/cli.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const WORKER_CONFIG = 'test/cli/fixtures/xor-worker-config.ts';

const show = async (key: string, ...flags: string[]) => {
  const run = await runCli(['show', key, '--schema', schema.name, '--json', ...flags]);
  expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
  return JSON.parse(run.stdout) as Record<string, unknown>;
};

interface Sms {
  readonly to: string;
  readonly text: string;
}

/** Sends one SMS through the interceptor (XorCodec on the worker) and returns its claim's key. */
async function sendSms(sms: Sms, options: Omit<IdempotencyOptions, 'store'> = {}): Promise<string> {
  const taskQueue = uniqueName('tq');
  const interceptors = { activity: idempotencyInterceptors({ store: schema.store, payloadCodecs: [new XorCodec()], ...options }) };
  const workflowId = uniqueName('wf');
  await temporal.withWorker({ taskQueue, activities: { sendSms: async (message: Sms) => ({ id: `sms_${message.to}` }) }, interceptors }, () =>
    temporal.client.workflow.execute('callActivity', { taskQueue, workflowId, args: [{ activity: 'sendSms', args: [sms] }] }),
  );
  const { rows } = await schema.pool.query<{ key: string }>(`SELECT key FROM "${schema.name}".claims WHERE workflow_id = $1`, [workflowId]);
  return rows[0]!.key;
}

describe('show', () => {
  it('prints the arguments, decoded with the workers’ codecs and checked against the fingerprint, and the key as hex and UUID', async () => {
    const sms: Sms = { to: uniqueName('+4917'), text: 'Your code is 4711' };
    const key = await sendSms(sms);
    expect(await show(key, '--worker-config', WORKER_CONFIG)).toMatchObject({
      key,
      key_uuid: keyToUuid(key),
      state: 'completed',
      result: { id: `sms_${sms.to}` },
      arguments: [sms],
      arguments_check: "match the claim's fingerprint",
    });
    // Encrypted at rest like the result: the phone number is not in the row.
    const { rows } = await schema.pool.query(`SELECT call_arguments::text AS text FROM "${schema.name}".claims WHERE key = $1`, [key]);
    expect(rows[0].text).not.toContain(sms.to.slice(1));
  });

  it('without the codecs, names what is missing instead of printing bytes', async () => {
    const key = await sendSms({ to: uniqueName('+4917'), text: 'hello' });
    expect(await show(key)).toMatchObject({
      arguments: "<binary/xor payload: give --worker-config the workers' codecs to read it>",
      arguments_check: 'not checked: not decoded',
    });
  });

  it('calls out arguments that were swapped in the table', async () => {
    const first = await sendSms({ to: uniqueName('+4917'), text: 'one' });
    const second = await sendSms({ to: uniqueName('+4917'), text: 'two' });
    await schema.pool.query(
      `UPDATE "${schema.name}".claims SET call_arguments = (SELECT call_arguments FROM "${schema.name}".claims WHERE key = $2) WHERE key = $1`,
      [first, second],
    );
    expect(await show(first, '--worker-config', WORKER_CONFIG)).toMatchObject({
      arguments_check: "DO NOT match the claim's fingerprint: not the arguments it was claimed with (the row was changed)",
    });
  });

  it('keeps no arguments for an activity type that says so', async () => {
    const key = await sendSms({ to: uniqueName('+4917'), text: 'secret' }, { activities: { sendSms: { recordArguments: false } } });
    expect(await show(key, '--worker-config', WORKER_CONFIG)).toMatchObject({ arguments: '(not recorded)', arguments_check: null });
    const { rows } = await schema.pool.query(`SELECT call_arguments FROM "${schema.name}".claims WHERE key = $1`, [key]);
    expect(rows[0].call_arguments).toBeNull();
  });
});
