/**
 * `resolve` records exactly the value the workflow will receive as the activity's return value.
 * Found by a new user following the runbook: they gave the vendor's own record (`{ id }`) where
 * the activity returns `{ chargeId }`, and the workflow finished with `undefined`. So the value
 * is held against what the activity type returned before, and against its `validateResult`, and a
 * mismatch is refused with both shapes shown (recorded anyway with --force).
 */
import { randomUUID } from 'node:crypto';
import { DefaultLogger } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { OutcomeUnknownError } from '../../src/index.js';
import { IdempotentActivityEnvironment } from '../../src/testing/index.js';
import { runCli } from '../support/cli.js';
import { useTestSchema } from '../support/schema.js';

const schema = useTestSchema(import.meta.filename);

/** A worker of this schema in its own workflow; chargeCard returns `{ chargeId }`, or fails ambiguously when told to. */
function worker() {
  const environment = new IdempotentActivityEnvironment({
    store: schema.store,
    info: { namespace: 'default', workflowExecution: { workflowId: `wf-${randomUUID()}`, runId: 'run-1' } },
    mockOptions: { logger: new DefaultLogger('ERROR') },
  });
  let drop = false;
  const chargeCard = async (order: string) => {
    if (drop) throw new OutcomeUnknownError('the line dropped after the vendor took it');
    return { chargeId: `ch_${order}` };
  };
  return {
    charge: (order: string) => environment.run(chargeCard, order),
    /** A charge whose outcome nobody knows: its key, for the operator. */
    async orphan(order: string): Promise<string> {
      drop = true;
      const failure = await environment.run(chargeCard, order).catch((error: unknown) => error as { details?: Array<{ key: string }> });
      drop = false;
      const { rows } = await schema.pool.query<{ key: string }>(`SELECT key FROM "${schema.name}".claims WHERE state = 'unknown' ORDER BY claimed_at DESC LIMIT 1`);
      void failure;
      return rows[0]!.key;
    },
  };
}

const resolve = (key: string, result: string, ...flags: string[]) =>
  runCli(['resolve', key, '--result', result, '--schema', schema.name, '--no-signal', '--json', ...flags]);

describe('resolve', () => {
  it('refuses a result whose shape is not what the activity returned before, showing both, and records it with --force', async () => {
    const charges = worker();
    await charges.charge('o-1');
    await charges.charge('o-2');
    const key = await charges.orphan('o-3');

    const refused = await resolve(key, '{"id":"ch_123","status":"succeeded"}');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/chargeCard returned \{ chargeId: string \} before \(2 recorded result\(s\)\); the result given is \{ id: string, status: string \}/);
    expect(refused.stderr).toMatch(/give what the activity returns \(not the vendor's own record\).*Nothing was changed; --force records it anyway/);
    expect((await schema.store.get(key))?.state).toBe('unknown');

    const forced = await resolve(key, '{"id":"ch_123","status":"succeeded"}', '--force');
    expect(forced.code).toBe(0);
    expect(JSON.parse(forced.stdout)).toMatchObject({ state: 'completed', result: { id: 'ch_123', status: 'succeeded' } });
  });

  it("records the activity's own return value, says what it was checked against, and the workflow receives exactly it", async () => {
    const charges = worker();
    await charges.charge('o-4');
    const key = await charges.orphan('o-5');
    const resolved = await resolve(key, '{"chargeId":"ch_by_hand"}');
    expect({ code: resolved.code, stderr: resolved.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(resolved.stdout)).toMatchObject({
      state: 'completed',
      result: { chargeId: 'ch_by_hand' },
      result_checked_against: expect.stringMatching(/^the shape of \d+ earlier result\(s\) of chargeCard$/),
    });
    // A null where the activity returned a string is a missing value the code may handle: allowed.
    const another = await charges.orphan('o-6');
    expect((await resolve(another, '{"chargeId":null}')).code).toBe(0);
  });

  it("runs the activity type's validateResult from --worker-config, before anything changes", async () => {
    const charges = worker();
    const key = await charges.orphan('o-7');
    const config = ['--worker-config', 'test/cli/fixtures/validating-worker-config.ts'];
    const refused = await resolve(key, '{"chargeId":"pi_123"}', ...config);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/validateResult for chargeCard refuses this result \(chargeCard returns \{ chargeId: "ch_…" \}\)/);
    expect((await schema.store.get(key))?.state).toBe('unknown');
    const resolved = await resolve(key, '{"chargeId":"ch_7"}', ...config);
    expect(resolved.code).toBe(0);
    expect(JSON.parse(resolved.stdout).result_checked_against).toMatch(/^validateResult of chargeCard; /);
  });
});
