/**
 * The README's reconcile-by-hand recipe, run as an operator would after a
 * refusal: `scripts/reconcile-by-hand.ts <key>` asks the vendor with the
 * reconcile of the example worker's own settings, and its answer, fed to the
 * CLI, finishes the call without a second charge.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, inject, it } from 'vitest';
import { IdempotencyOrphanedClaim, idempotencyInterceptors } from '../../src/index.js';
import type { RefusalDetails } from '../../src/index.js';
import { CHARGE_ROUTE, createActivities } from '../../activities/index.js';
import type { ChargeRequest } from '../../activities/index.js';
import { LOOKUP_ROUTE } from '../../activities/fake-vendor.js';
import { useVendor } from '../support/example-workers.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { activityFailureOf } from '../support/failures.js';
import { claimRequest } from '../support/claims.js';
import { runCli } from '../support/cli.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const vendor = useVendor();
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface ScriptRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function reconcileByHand(key: string): Promise<ScriptRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'scripts/reconcile-by-hand.ts', key],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: inject('databaseUrl'), VENDOR_URL: vendor.url, IDEMPOTENCY_SCHEMA: schema.name } },
      (error, stdout, stderr) => resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('reconcile by hand', () => {
  it('after a refusal: the script finds the charge happened, and resolving with its answer finishes the workflow; one charge', async () => {
    const charge: ChargeRequest = { orderId: uniqueName('order'), customerId: 'c-1', amountCents: 4200, currency: 'EUR' };
    // The vendor charges, then never finishes its answer: the call's outcome is unknown, and it is refused.
    vendor.script(CHARGE_ROUTE, 'stall-body');
    const taskQueue = uniqueName('tq');
    const workflowId = uniqueName('wf');
    const worker = {
      taskQueue,
      activities: createActivities({ vendorUrl: vendor.url, requestTimeoutMs: 1_000 }),
      interceptors: { activity: idempotencyInterceptors({ store: schema.store }) },
    };
    const start = () => temporal.client.workflow.execute('callActivity', { taskQueue, workflowId, args: [{ activity: 'chargeCard', args: [charge] }] });
    const failure = await activityFailureOf(temporal.withWorker(worker, start));
    expect(failure.type).toBe(IdempotencyOrphanedClaim);
    const { key } = failure.details![0] as RefusalDetails;
    const [performed, ...more] = vendor.actionsOn(CHARGE_ROUTE).filter((action) => (action.body as ChargeRequest).orderId === charge.orderId);
    expect(more).toHaveLength(0);

    const asked = await reconcileByHand(key);
    expect(asked.code).toBe(0);
    const { answer, ...claim } = JSON.parse(asked.stdout) as { answer: { outcome: string; result: { id: string } } };
    expect(claim).toEqual({ key, activity_type: 'chargeCard', state: 'unknown' });
    expect(answer).toEqual({ outcome: 'happened', result: expect.objectContaining({ id: performed!.id }) });
    expect(asked.stderr).toContain(`temporal-idempotency resolve ${key} --result-file -`);

    // The next step it names, with its answer's result on standard input.
    const resolved = await runCli(['resolve', key, '--result-file', '-', '--schema', schema.name, '--no-signal'], {}, { input: JSON.stringify(answer.result) });
    expect({ code: resolved.code, stderr: resolved.stderr }).toEqual({ code: 0, stderr: '' });
    // Started again (workflow scope: the same key), the charge answers from the record.
    expect(await temporal.withWorker(worker, start)).toEqual([answer.result]);
    expect(vendor.actionsOn(CHARGE_ROUTE).filter((action) => (action.body as ChargeRequest).orderId === charge.orderId)).toHaveLength(1);
  });

  it('says "did not happen" for a key the vendor never saw (warning while the owner may still call), "unknown" with the lookup down', async () => {
    const request = claimRequest({ activityType: 'placeCall' });
    await schema.store.begin(request, 60_000);
    const notHappened = await reconcileByHand(request.key);
    expect(notHappened.code).toBe(0);
    expect(JSON.parse(notHappened.stdout)).toMatchObject({ state: 'claimed', answer: { outcome: 'not-happened' } });
    expect(notHappened.stderr).toMatch(/the owner's lease is live \(test-host\/1\): it may still be calling/);
    expect(notHappened.stderr).toContain(`temporal-idempotency release ${request.key}`);

    vendor.script(LOOKUP_ROUTE, 'unavailable');
    const down = await reconcileByHand(request.key);
    expect(down.code).toBe(0);
    expect(JSON.parse(down.stdout)).toMatchObject({ answer: { outcome: 'unknown', reason: "the vendor's lookup answered 503" } });
    expect(down.stderr).toMatch(/Nobody can tell .*check the vendor by hand/);
  });

  it('asks without the arguments when they were recorded through a codec it cannot read, and says so', async () => {
    const request = claimRequest({
      activityType: 'placeCall',
      // What a worker with an encrypting codec records: bytes this script cannot decode.
      arguments: { metadata: { encoding: new TextEncoder().encode('binary/xor') }, data: new Uint8Array([1, 2, 3]) },
    });
    await schema.store.begin(request, 60_000);
    const asked = await reconcileByHand(request.key);
    expect(asked.code).toBe(0);
    expect(JSON.parse(asked.stdout)).toMatchObject({ answer: { outcome: 'not-happened' } });
    expect(asked.stderr).toMatch(/the recorded arguments cannot be read here .*the reconcile is asked without them/);
  });

  it('names what it cannot ask: a type without reconcile, and a key with no claim', async () => {
    const request = claimRequest({ activityType: 'sendSms' });
    await schema.store.begin(request, 60_000);
    const noReconcile = await reconcileByHand(request.key);
    expect({ code: noReconcile.code, stdout: noReconcile.stdout }).toEqual({ code: 4, stdout: '' });
    expect(noReconcile.stderr).toMatch(/sendSms has no reconcile in the worker's settings/);
    const missing = await reconcileByHand('0'.repeat(64));
    expect({ code: missing.code, stdout: missing.stdout }).toEqual({ code: 3, stdout: '' });
  });
});
