/**
 * `resolve --worker-config`, as an operator of a deployment with an encrypting
 * codec runs it: the result they type (a card number in it) is stored encoded
 * with the workers' codec, never as plain text in the claims table or the
 * operator trail, and the waiting workflow, on a worker with that codec, gets
 * exactly the result the operator gave; the activity is not called again.
 */
import { describe, expect, inject, it } from 'vitest';
import { OutcomeUnknownError, idempotencyInterceptors } from '../../src/index.js';
import { XorCodec } from '../support/codecs.js';
import { runCli } from '../support/cli.js';
import { waitingOn } from '../support/pending-refusal.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const WORKER_CONFIG = 'test/cli/fixtures/xor-worker-config.ts';

const cli = (...args: string[]) => runCli([...args, '--schema', schema.name], { TEMPORAL_ADDRESS: inject('temporalAddress') });

describe('resolve --worker-config', () => {
  it('stores the operator’s result through the workers’ codec, and the workflow on a worker with that codec returns it', async () => {
    // A card number of this run only, so finding it anywhere can only mean this resolution put it there.
    const card = `4${String(Date.now()).slice(-12)}${String(Math.floor(Math.random() * 1_000)).padStart(3, '0')}`;
    const resolved = { chargeId: 'ch_by_hand', card, amountCents: 4200 };
    const charges: string[] = [];
    const activities = {
      chargeCard: async (order: { orderId: string }) => {
        charges.push(order.orderId);
        throw new OutcomeUnknownError('the connection dropped after the vendor took the charge');
      },
    };
    const interceptors = { activity: idempotencyInterceptors({ store: schema.store, payloadCodecs: [new XorCodec()] }) };
    const taskQueue = uniqueName('tq');
    const orderId = uniqueName('order');
    const { key, result } = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      const handle = await temporal.client.workflow.start('resumableCallActivity', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'chargeCard', args: [{ orderId }] }],
      });
      const { key } = await waitingOn(handle);
      const run = await cli('resolve', key, '--result', JSON.stringify(resolved), '--worker-config', WORKER_CONFIG, '--reason', 'vendor dashboard');
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: `Signalled workflow ${handle.workflowId}: resolved.\n` });
      return { key, result: await handle.result() };
    });
    expect(result).toEqual([resolved]);
    expect(charges).toEqual([orderId]);

    // Encoded at rest: the payload is the codec's, and neither it nor any other column holds the card in plain text.
    const { rows } = await schema.pool.query<{ payload: { metadata: Record<string, string>; data: string }; row: string }>(
      `SELECT result_payload AS payload, row_to_json(c)::text AS row FROM "${schema.name}".claims c WHERE key = $1`,
      [key],
    );
    const stored = rows[0]!;
    expect(Buffer.from(stored.payload.metadata['encoding']!, 'base64').toString()).toBe('binary/xor');
    expect(Buffer.from(stored.payload.data, 'base64').toString('latin1')).not.toContain(card);
    expect(stored.row).not.toContain(card);
    const trail = await schema.pool.query<{ row: string }>(`SELECT row_to_json(o)::text AS row FROM "${schema.name}".operator_actions o WHERE key = $1`, [key]);
    expect(trail.rows).toHaveLength(1);
    expect(trail.rows[0]!.row).not.toContain(card);

    // The operator reads it back with the same module; without it, the CLI says what it lacks.
    const shown = await cli('show', key, '--json', '--worker-config', WORKER_CONFIG);
    expect(JSON.parse(shown.stdout)).toMatchObject({ state: 'completed', result: resolved });
    const opaque = await cli('show', key, '--json');
    expect(JSON.parse(opaque.stdout)).toMatchObject({ result: "<binary/xor payload: give --worker-config the workers' codecs to read it>" });
  });

  it('refuses, changing nothing, to store the result in plain text when the claim shows the workers encrypt, unless --plaintext', async () => {
    const activities = {
      chargeCard: async (_order: { orderId: string }) => {
        throw new OutcomeUnknownError('the connection dropped after the vendor took the charge');
      },
    };
    const interceptors = { activity: idempotencyInterceptors({ store: schema.store, payloadCodecs: [new XorCodec()] }) };
    const taskQueue = uniqueName('tq');
    await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      const handle = await temporal.client.workflow.start('resumableCallActivity', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'chargeCard', args: [{ orderId: uniqueName('order') }] }],
      });
      const { key } = await waitingOn(handle);
      const refused = await cli('resolve', key, '--result', '{"card":"4242424242424242"}');
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(`key ${key}'s recorded arguments are binary/xor`);
      expect(refused.stderr).toContain('Give --worker-config');
      expect((await schema.store.get(key))?.state).toBe('unknown');
      const plain = await cli('resolve', key, '--result', '{"id":"ch_plain"}', '--plaintext', '--no-signal');
      expect(plain.code).toBe(0);
      expect((await schema.store.get(key))?.state).toBe('completed');
      await handle.terminate();
    });
  });
});
