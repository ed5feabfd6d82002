/**
 * A completed record is the answer a retry, a reset or a repeat gets instead of a second call: the
 * CLI never releases or replaces one it merely cannot check (it lacks the secret that signed it),
 * --force or not. Found in review: with --force, a CLI given no secret, or only the next one
 * mid-rotation, deleted or replaced genuine records, and the charge ran twice. Only a record whose
 * MAC fails under the secret it names, or one a leaked secret signed (--distrust), may be replaced,
 * with --force.
 */
import { randomUUID } from 'node:crypto';
import { DefaultLogger } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { ClaimOperations, PostgresClaimStore } from '../../src/index.js';
import { deriveCallKeys } from '../../src/key/index.js';
import { RecordSecret } from '../../src/store/record-signing.js';
import { IdempotentActivityEnvironment } from '../../src/testing/index.js';
import { runCli } from '../support/cli.js';
import { useTestSchema } from '../support/schema.js';

const schema = useTestSchema(import.meta.filename);
const SECRET = 'completed-records-worker-secret-of-32-bytes-or-more';
const NEXT = 'completed-records-next-secret-of-32-bytes-or-more!!';

/** A worker that signs with SECRET, in its own workflow; charge counts the vendor's calls. */
function worker(workflowId: string) {
  const store = new PostgresClaimStore({ pool: schema.pool, schema: schema.name, secret: SECRET, previousSecrets: [NEXT] });
  const environment = new IdempotentActivityEnvironment({
    store,
    info: { namespace: 'default', workflowExecution: { workflowId, runId: 'run-1' } },
    mockOptions: { logger: new DefaultLogger('ERROR') },
  });
  let charges = 0;
  const charge = async (order: string) => (charges++, { charged: order });
  return { run: (order: string) => environment.run(charge, order), charges: () => charges };
}

async function keyOf(workflowId: string, order: string): Promise<string> {
  const salt = await new ClaimOperations(schema.pool, { schema: schema.name }).keySalt();
  return deriveCallKeys({ namespace: 'default', scopeMaterial: { scope: 'workflow', workflowId }, activityType: 'charge', semanticArgs: [order] }, salt).key;
}

const cli = (env: Record<string, string>, ...args: string[]) =>
  runCli([...args, '--schema', schema.name, '--reason', 'test', '--no-signal'], env);

describe('a completed record and the CLI', () => {
  it('is neither released nor replaced by a CLI that cannot check it, --force or not: the charge is not made twice', async () => {
    const workflowId = `wf-${randomUUID()}`;
    const charges = worker(workflowId);
    await charges.run('order-1');
    const key = await keyOf(workflowId, 'order-1');
    for (const env of [{}, { TEMPORAL_IDEMPOTENCY_SECRET: NEXT }] as Array<Record<string, string>>) {
      for (const args of [['release', key, '--force'], ['resolve', key, '--result', '{"charged":"other"}', '--force']]) {
        const run = await cli(env, ...args);
        expect({ args, code: run.code }).toEqual({ args, code: 4 });
        expect(run.stderr).toMatch(/which the CLI cannot check: refusing to touch it, whatever --force says/);
      }
    }
    await expect(charges.run('order-1')).resolves.toEqual({ charged: 'order-1' });
    expect(charges.charges()).toBe(1);
  });

  it('is replaced with --force once its signer is named as leaked (--distrust), or its MAC fails', async () => {
    const workflowId = `wf-${randomUUID()}`;
    const charges = worker(workflowId);
    await charges.run('order-2');
    await charges.run('order-3');
    const [leaked, edited] = [await keyOf(workflowId, 'order-2'), await keyOf(workflowId, 'order-3')];
    const distrust = ['--distrust', new RecordSecret(SECRET).id];
    expect((await cli({ TEMPORAL_IDEMPOTENCY_SECRET: NEXT }, 'release', leaked, ...distrust)).code).toBe(4);
    expect((await cli({ TEMPORAL_IDEMPOTENCY_SECRET: NEXT }, 'release', leaked, '--force', ...distrust)).code).toBe(0);
    // A writer without the secret edits the other record: it fails under the secret it names, which the CLI holds.
    await schema.pool.query(`UPDATE "${schema.name}".claims SET result_payload = jsonb_set(result_payload, '{data}', '"e30="') WHERE key = $1`, [edited]);
    const resolved = await cli({ TEMPORAL_IDEMPOTENCY_SECRET: SECRET }, 'resolve', edited, '--result', '{"charged":"order-3"}', '--force', '--json');
    expect(resolved.code).toBe(0);
    await expect(charges.run('order-2')).resolves.toEqual({ charged: 'order-2' });
    await expect(charges.run('order-3')).resolves.toEqual({ charged: 'order-3' });
    expect(charges.charges()).toBe(3);
  });
});
