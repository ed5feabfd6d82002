/**
 * `temporal-idempotency key` computes the key a worker claimed a call under, from what an operator (or
 * another service) has: the activity type, the workflow's ids and the arguments as JSON. Checked against
 * real claims a worker made through Temporal, in each scope, with keyArgs and with a key() of its own.
 */
import { describe, expect, it } from 'vitest';
import { idempotencyInterceptors } from '../../src/index.js';
import { runCli } from '../support/cli.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

interface ClaimRow {
  key: string;
  fingerprint: string;
  workflow_id: string;
  run_id: string;
  activity_id: string;
}

const ORDER = { orderId: 'ord-ü-1', amount: { cents: 4200, currency: 'EUR' }, lines: [{ sku: 'a"b', qty: 2 }, { sku: '😀', qty: -0 }], note: null };

/** Runs `activity` once through a real worker and returns the claim it made. */
async function claimedBy(activity: string, args: unknown[]): Promise<ClaimRow> {
  const taskQueue = uniqueName('tq');
  const activities = { chargeCard: async () => 'ch_1', chargeByOrder: async () => 'ch_2', chargePerCall: async () => 'ch_3', chargeWithOwnKey: async () => 'ch_4' };
  const interceptors = {
    activity: idempotencyInterceptors({
      store: schema.store,
      activities: {
        chargeByOrder: { keyArgs: (callArgs) => (callArgs[0] as typeof ORDER).orderId },
        chargePerCall: { scope: 'call' },
        chargeWithOwnKey: { key: ({ args: callArgs }) => `charge:${(callArgs[0] as typeof ORDER).orderId}` },
      },
    }),
  };
  const workflowId = uniqueName('wf');
  await temporal.withWorker({ taskQueue, activities, interceptors }, () =>
    temporal.client.workflow.execute('callActivity', { taskQueue, workflowId, args: [{ activity, args }] }),
  );
  const { rows } = await schema.pool.query<ClaimRow>(
    `SELECT key, fingerprint, workflow_id, run_id, activity_id FROM "${schema.name}".claims WHERE workflow_id = $1`,
    [workflowId],
  );
  expect(rows).toHaveLength(1);
  return rows[0]!;
}

const keyOf = async (...args: string[]) => {
  const run = await runCli(['key', ...args, '--schema', schema.name, '--json']);
  expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
  return JSON.parse(run.stdout) as { key: string; key_uuid: string; fingerprint: string; claim: string };
};

describe('temporal-idempotency key', () => {
  it('gives the key and fingerprint a worker claimed under (workflow scope), and finds that claim', async () => {
    const claim = await claimedBy('chargeCard', [ORDER, 3]);
    const printed = await keyOf('--activity', 'chargeCard', '--workflow', claim.workflow_id, '--args', JSON.stringify([ORDER, 3]));
    expect(printed).toMatchObject({ key: claim.key, fingerprint: claim.fingerprint });
    expect(printed.key_uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(printed.claim).toBe(`completed, with these arguments: temporal-idempotency show ${claim.key}`);
    // Other arguments: another key, and no claim under it.
    const other = await keyOf('--activity', 'chargeCard', '--workflow', claim.workflow_id, '--args', JSON.stringify([ORDER, 4]));
    expect(other.key).not.toBe(claim.key);
    expect(other.claim).toBe('none in this schema');
  });

  it('with keyArgs: the key is of what keyArgs returns', async () => {
    const claim = await claimedBy('chargeByOrder', [ORDER]);
    const printed = await keyOf('--activity', 'chargeByOrder', '--workflow', claim.workflow_id, '--args', JSON.stringify(ORDER.orderId));
    expect(printed).toMatchObject({ key: claim.key, fingerprint: claim.fingerprint });
  });

  it('in call scope: on the run and the activity id too', async () => {
    const claim = await claimedBy('chargePerCall', [ORDER]);
    const printed = await keyOf(
      '--activity', 'chargePerCall', '--scope', 'call', '--workflow', claim.workflow_id, '--run', claim.run_id,
      '--activity-id', claim.activity_id, '--args', JSON.stringify([ORDER]),
    );
    expect(printed).toMatchObject({ key: claim.key, fingerprint: claim.fingerprint });
  });

  it("with the activity's own key(): from what key() returns", async () => {
    const claim = await claimedBy('chargeWithOwnKey', [ORDER]);
    const printed = await keyOf('--activity', 'chargeWithOwnKey', '--custom-key', `charge:${ORDER.orderId}`, '--args', JSON.stringify([ORDER]));
    expect(printed).toMatchObject({ key: claim.key, fingerprint: claim.fingerprint });
  });

  it.each([
    [['--args', '[1]'], /key needs --activity TYPE/],
    [['--activity', 'chargeCard', '--workflow', 'wf-1'], /key needs --args JSON/],
    [['--activity', 'chargeCard', '--workflow', 'wf-1', '--args', '[1,'], /--args is not JSON/],
    [['--activity', 'chargeCard', '--scope', 'workflw', '--workflow', 'wf-1', '--args', '[]'], /--scope "workflw" is not one of workflow, run, call/],
    [['--activity', 'chargeCard', '--scope', 'call', '--workflow', 'wf-1', '--run', 'r-1', '--args', '[]'], /--scope call keys on --workflow, --run, --activity-id: give --activity-id/],
    [['--activity', 'chargeCard', '--args', '[]'], /keys on --activity-id: give --activity-id/],
    // Empty, it would name no key the worker could ever claim under.
    [['--activity', 'chargeCard', '--custom-key', '', '--args', '[]'], /--custom-key is empty/],
  ])('refuses %j by name, exit 2', async (args, message) => {
    const run = await runCli(['key', ...args, '--schema', schema.name]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
  });
});
