/**
 * `ledger` says what it knows, and what it cannot: a worker without the audit ledger writes no
 * entry, so its calls leave no trace there. Found following the runbook: `ledger --key` printed
 * "(none)" and exited 0 for a call whose worker ran without the ledger (the default), which reads
 * as "no call went out", and `release` then makes it twice.
 */
import { randomUUID } from 'node:crypto';
import { DefaultLogger } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { OutcomeUnknownError } from '../../src/index.js';
import { IdempotentActivityEnvironment } from '../../src/testing/index.js';
import { claimRequest } from '../support/claims.js';
import { runCli } from '../support/cli.js';
import { useTestSchema } from '../support/schema.js';

const schema = useTestSchema(import.meta.filename);

/** One call of `placeCall` whose line drops after the vendor took it, on a worker with or without the ledger; its key. */
async function droppedCall(audit: boolean): Promise<string> {
  const workflowId = `wf-${randomUUID()}`;
  const environment = new IdempotentActivityEnvironment({
    store: schema.store,
    audit,
    info: { namespace: 'default', workflowExecution: { workflowId, runId: 'run-1' } },
    mockOptions: { logger: new DefaultLogger('ERROR') },
  });
  const placeCall = async (_to: string) => {
    throw new OutcomeUnknownError('the line dropped after the vendor took the call');
  };
  await environment.run(placeCall, '+4915112345678').catch(() => undefined);
  const { rows } = await schema.pool.query<{ key: string }>(`SELECT key FROM "${schema.name}".claims WHERE workflow_id = $1`, [workflowId]);
  return rows[0]!.key;
}

const ledger = (...args: string[]) => runCli(['ledger', ...args, '--schema', schema.name]);

describe('ledger', () => {
  it('for a call whose worker ran without the ledger, says it cannot tell, and exits 7', async () => {
    const key = await droppedCall(false);
    const run = await ledger('--key', key);
    expect(run.code).toBe(7);
    expect(run.stdout).toBe('(none)\n');
    expect(run.stderr).toMatch(/1 of the 1 claim\(s\) for key [0-9a-f]{64} were made by workers without the audit ledger/);
    expect(run.stderr).toMatch(/cannot say whether their calls went out.*do not read a missing entry as "not sent"/s);
  });

  it('for a call the ledger recorded, prints it and exits 0', async () => {
    const key = await droppedCall(true);
    const run = await ledger('--key', key, '--json');
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(run.stdout)).toEqual([expect.objectContaining({ key, activity_type: 'placeCall', outcome: 'outcome-unknown' })]);
  });

  it('for a claim made with the ledger on and no entry, says no call went out under it', async () => {
    const { claim } = await schema.store.begin(claimRequest({ audited: true }), 60_000);
    const run = await ledger('--key', claim.key);
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/was made with the audit ledger on, and it has no entry: no call went out under a claim without an outcome/);
  });

  it('for a key with neither a claim nor an entry, says nothing here can tell, and exits 7', async () => {
    const run = await ledger('--key', 'f'.repeat(64));
    expect(run.code).toBe(7);
    expect(run.stderr).toMatch(/No ledger entry and no claim for key f{64}: nothing here says whether a call went out/);
  });
});
