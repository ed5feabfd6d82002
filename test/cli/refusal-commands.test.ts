/**
 * A refusal says what to run next, with the real key, in the form that runs from the project
 * (`npx temporal-idempotency …`), what JSON `resolve` takes, and until when `--force` is needed.
 * Found by a new user: the refusal printed `resolve <key> --result JSON` a line after the key, so
 * the command could not be pasted, and did not say that `resolve` is refused until the attempt's
 * deadline. Here the commands are taken from the refusal as printed and run.
 */
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { DefaultLogger } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { OutcomeUnknownError } from '../../src/index.js';
import { deriveCallKeys } from '../../src/key/index.js';
import { IdempotentActivityEnvironment } from '../../src/testing/index.js';
import { claimRequest } from '../support/claims.js';
import { runCli } from '../support/cli.js';
import { useTestSchema } from '../support/schema.js';

const schema = useTestSchema(import.meta.filename);

/** The commands in backticks that start with `npx temporal-idempotency`, as the operator would copy them. */
function commandsIn(message: string): string[] {
  return [...message.matchAll(/`(npx temporal-idempotency [^`]+)`/g)].map((match) => match[1]!);
}

/** A command as a shell splits it (single quotes kept together), without the `npx temporal-idempotency` that runs the CLI. */
function argv(command: string): string[] {
  return [...command.matchAll(/'([^']*)'|(\S+)/g)].map((match) => match[1] ?? match[2]!).slice(2);
}

async function refusedCharge(options: { startToCloseTimeoutMs?: number } = {}) {
  const environment = new IdempotentActivityEnvironment({
    store: schema.store,
    info: { namespace: 'default', workflowExecution: { workflowId: `wf-${randomUUID()}`, runId: 'run-1' }, ...options },
    mockOptions: { logger: new DefaultLogger('ERROR') },
  });
  let calls = 0;
  const chargeCard = async (order: string) => {
    if (++calls === 1) throw new OutcomeUnknownError('the line dropped after the vendor took it');
    return { chargeId: `ch_${order}_${calls}` };
  };
  await environment.run(chargeCard, 'o-1').catch(() => undefined);
  const refusal = await environment.run(chargeCard, 'o-1').then(
    () => {
      throw new Error('the second attempt was not refused');
    },
    (error: unknown) => error as ApplicationFailure,
  );
  return { refusal, again: () => environment.run(chargeCard, 'o-1'), calls: () => calls };
}

describe("a refusal's commands", () => {
  it('carry the real key and run as pasted, with the activity\'s return value as the JSON', async () => {
    const { refusal, again, calls } = await refusedCharge();
    const { key } = refusal.details?.[0] as { key: string };
    const [resolve, release] = commandsIn(refusal.message);
    expect(resolve).toBe(`npx temporal-idempotency resolve ${key} --result '<what chargeCard returns, as JSON>'`);
    expect(release).toBe(`npx temporal-idempotency release ${key}`);
    expect(refusal.message).toContain("(the activity's own return value, not the vendor's record)");
    // The operator puts the activity's return value where the placeholder says, and runs it as printed.
    const pasted = argv(resolve!.replace('<what chargeCard returns, as JSON>', '{"chargeId":"ch_by_hand"}'));
    const run = await runCli([...pasted, '--schema', schema.name, '--no-signal']);
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    await expect(again()).resolves.toEqual({ chargeId: 'ch_by_hand' });
    expect(calls()).toBe(1);
  });

  it('say until when --force is needed, while the refused attempt may still run', async () => {
    const workflowId = `wf-${randomUUID()}`;
    const salt = await schema.store.keySalt();
    const { key, fingerprint } = deriveCallKeys(
      { namespace: 'default', scopeMaterial: { scope: 'workflow', workflowId }, activityType: 'chargeCard', semanticArgs: ['o-2'] },
      salt,
    );
    // Attempt 1 claimed with an hour to run, and its worker stopped renewing at once (a pause, or a crash).
    await schema.store.begin(claimRequest({ key, fingerprint, workflowId, activityType: 'chargeCard', deadlineMs: 60 * 60_000 }), 1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const environment = new IdempotentActivityEnvironment({
      store: schema.store,
      info: { namespace: 'default', workflowExecution: { workflowId, runId: 'run-1' } },
      mockOptions: { logger: new DefaultLogger('ERROR') },
    });
    const chargeCard = async (_order: string) => 'unreachable';
    const refusal = (await environment.run(chargeCard, 'o-2').catch((error: unknown) => error)) as ApplicationFailure;
    const deadline = (await schema.store.get(key))!.deadlineAt!.toISOString();
    expect(refusal.message).toContain(`Until ${deadline} (the end of that attempt's time) both need --force, and only once you know its worker stopped`);
    const release = argv(commandsIn(refusal.message)[1]!);
    expect(release).toEqual(['release', key]);
    const refused = await runCli([...release, '--schema', schema.name, '--no-signal']);
    expect(refused.code).toBe(4);
    expect(refused.stderr).toContain(deadline);
    expect((await runCli([...release, '--force', '--schema', schema.name, '--no-signal'])).code).toBe(0);
  });
});
