/**
 * The CLI reaches Temporal the way the `temporal` CLI does (@temporalio/envconfig):
 * a profile in a TOML config file, TEMPORAL_PROFILE to pick one, TEMPORAL_* variables
 * over it. Checked against the dev server by the signal a decision sends: it is in
 * the workflow's history, or the CLI exits 6 saying what failed and what to do.
 * The workflows run no worker: a signal is recorded all the same.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { EXIT } from '../../src/cli/errors.js';
import { OPERATOR_DECISION_SIGNAL } from '../../src/operator-decision.js';
import { claimRequest } from '../support/claims.js';
import { runCli } from '../support/cli.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

/** An optional peer: test:peers runs the suite without it on SDK releases it has no release for. */
const ENVCONFIG = '@temporalio/envconfig';
const hasEnvconfig = await import(ENVCONFIG).then(
  () => true,
  () => false,
);

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const started: string[] = [];
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'temporal-profile-'));
});
afterAll(async () => {
  await Promise.all(started.map((id) => temporal.client.workflow.getHandle(id).terminate('test over').catch(() => undefined)));
  await rm(dir, { recursive: true, force: true });
});

/** A running workflow (no worker) and a lapsed claim of it, released by the CLI. */
async function waitingWorkflow(): Promise<{ workflowId: string; key: string }> {
  const workflowId = uniqueName('wf');
  await temporal.client.workflow.start('resumableCallActivity', { taskQueue: uniqueName('tq'), workflowId, args: [{ activity: 'none', args: [] }] });
  started.push(workflowId);
  const { claim } = await schema.store.begin(claimRequest({ workflowId }), 1_000);
  await schema.pool.query(`UPDATE "${schema.name}".claims SET lease_expires_at = now() - interval '1 second' WHERE key = $1`, [claim.key]);
  return { workflowId, key: claim.key };
}

async function signalsTo(workflowId: string): Promise<string[]> {
  const history = await temporal.client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).flatMap((event) => event.workflowExecutionSignaledEventAttributes?.signalName ?? []);
}

async function configFile(toml: string): Promise<string> {
  const path = join(dir, `${uniqueName('temporal')}.toml`);
  await writeFile(path, toml);
  return path;
}

/** The CLI with only the Temporal settings given: none inherited, and no default config file. */
function cli(args: string[], temporalEnv: Record<string, string>) {
  const unset = { TEMPORAL_ADDRESS: '', TEMPORAL_NAMESPACE: '', TEMPORAL_PROFILE: '', TEMPORAL_CONFIG_FILE: '', TEMPORAL_API_KEY: '' };
  return runCli([...args, '--schema', schema.name], { ...unset, XDG_CONFIG_HOME: dir, ...temporalEnv });
}

describe('the CLI connects to Temporal with TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE', () => {
  it('alone, without a config file: the signal reaches the workflow in that namespace', async () => {
    const { workflowId, key } = await waitingWorkflow();
    const run = await cli(['release', key, '--workflow-id', workflowId], { TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_NAMESPACE: 'default' });
    expect(run.code).toBe(EXIT.ok);
    expect(await signalsTo(workflowId)).toEqual([OPERATOR_DECISION_SIGNAL]);
  });
});

describe.skipIf(hasEnvconfig)('without @temporalio/envconfig installed', () => {
  it.each([
    ['a config file', async () => ({ TEMPORAL_CONFIG_FILE: await configFile(`[profile.default]\naddress = "${inject('temporalAddress')}"\n`) })],
    ['an API key', async () => ({ TEMPORAL_API_KEY: 'key-9b1c-secret', TEMPORAL_ADDRESS: inject('temporalAddress') })],
  ])('%s is not ignored: the CLI exits 2 naming the package to install, changes nothing and signals nothing', async (_, settings) => {
    const { workflowId, key } = await waitingWorkflow();
    const run = await cli(['release', key], await settings());
    expect(run.code).toBe(EXIT.usage);
    expect(run.stderr).toMatch(/need @temporalio\/envconfig, which is not installed: .*npm install @temporalio\/envconfig@\d+\.\d+\.\d+; npm has none for some versions/);
    expect(run.stderr).toMatch(/Nothing was changed\..*--no-signal/);
    expect(run.stderr).not.toContain('key-9b1c-secret');
    expect(await schema.store.get(key)).toMatchObject({ state: 'claimed' });
    expect(await signalsTo(workflowId)).toEqual([]);
  });
});

describe.runIf(hasEnvconfig)('the CLI connects to Temporal as the temporal CLI does', () => {
  it('with the default profile of TEMPORAL_CONFIG_FILE: the signal reaches the workflow', async () => {
    const { workflowId, key } = await waitingWorkflow();
    const file = await configFile(`[profile.default]\naddress = "${inject('temporalAddress')}"\nnamespace = "default"\n`);
    const run = await cli(['release', key], { TEMPORAL_CONFIG_FILE: file });
    expect(run.stderr).toContain(`Signalled workflow ${workflowId}: released.`);
    expect(run.code).toBe(EXIT.ok);
    expect(await signalsTo(workflowId)).toEqual([OPERATOR_DECISION_SIGNAL]);
  });

  it('TEMPORAL_PROFILE picks a profile, and TEMPORAL_ADDRESS overrides its address', async () => {
    const file = await configFile(
      `[profile.default]\naddress = "${inject('temporalAddress')}"\n\n[profile.staging]\naddress = "127.0.0.1:1"\nnamespace = "default"\n`,
    );
    const unreachable = await waitingWorkflow();
    const refused = await cli(['release', unreachable.key], { TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'staging' });
    expect(refused.code).toBe(EXIT.signalFailed);
    expect(refused.stderr).toMatch(/cannot connect to Temporal at 127\.0\.0\.1:1 \(plaintext, profile staging\)/);
    expect(refused.stderr).toContain(`temporal-idempotency resume ${unreachable.key}`);

    const overridden = await waitingWorkflow();
    const run = await cli(['release', overridden.key], { TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'staging', TEMPORAL_ADDRESS: inject('temporalAddress') });
    expect(run.code).toBe(EXIT.ok);
    expect(await signalsTo(overridden.workflowId)).toEqual([OPERATOR_DECISION_SIGNAL]);
  });

  it("signals a workflow named by --workflow-id in the profile's namespace", async () => {
    const { workflowId, key } = await waitingWorkflow();
    const file = await configFile(`[profile.default]\naddress = "${inject('temporalAddress')}"\nnamespace = "no-such-namespace"\n`);
    const run = await cli(['release', key, '--workflow-id', 'named-by-hand'], { TEMPORAL_CONFIG_FILE: file });
    // The claim's own workflow is signalled in its recorded namespace; the one named by hand in the profile's.
    expect(await signalsTo(workflowId)).toEqual([OPERATOR_DECISION_SIGNAL]);
    expect(run.code).toBe(EXIT.signalFailed);
    expect(run.stderr).toMatch(/signalling workflow named-by-hand in namespace no-such-namespace failed .*no-such-namespace/);
  });

  it('an API key in the profile turns TLS on unless the profile disables it, and is never printed', async () => {
    const { workflowId, key } = await waitingWorkflow();
    // The dev server checks no credentials; TLS, which an API key turns on, is disabled for it.
    const file = await configFile(
      `[profile.default]\naddress = "${inject('temporalAddress')}"\napi_key = "key-9b1c-secret"\n\n[profile.default.tls]\ndisabled = true\n`,
    );
    const run = await cli(['release', key], { TEMPORAL_CONFIG_FILE: file });
    expect(run.code).toBe(EXIT.ok);
    expect(await signalsTo(workflowId)).toEqual([OPERATOR_DECISION_SIGNAL]);

    // Without `disabled`, the API key turns TLS on, which the dev server does not speak: the failure says so.
    const tls = await waitingWorkflow();
    const tlsFile = await configFile(`[profile.default]\naddress = "${inject('temporalAddress')}"\napi_key = "key-9b1c-secret"\n`);
    const failed = await cli(['release', tls.key], { TEMPORAL_CONFIG_FILE: tlsFile });
    expect(failed.code).toBe(EXIT.signalFailed);
    expect(failed.stderr).toMatch(/cannot connect to Temporal at \S+ \(TLS, API key\)/);
    expect(failed.stderr).not.toContain('key-9b1c-secret');
  });

  it.each([
    ['a profile that does not exist', { TEMPORAL_PROFILE: 'nope' }, /Profile 'nope' not found/],
    ['a config file that does not exist', { TEMPORAL_CONFIG_FILE: '/nonexistent/temporal.toml' }, /TEMPORAL_CONFIG_FILE names \/nonexistent\/temporal\.toml, which does not exist/],
  ])('%s: nothing is changed, and the CLI exits 2 saying what to fix (or to pass --no-signal)', async (_, env, message) => {
    const { workflowId, key } = await waitingWorkflow();
    const file = await configFile(`[profile.default]\naddress = "${inject('temporalAddress')}"\n`);
    for (const command of [['release', key], ['resolve', key, '--result', '{"id":"ch_1"}']]) {
      const run = await cli(command, { TEMPORAL_CONFIG_FILE: file, ...env });
      expect(run.code, command[0]).toBe(EXIT.usage);
      expect(run.stderr).toMatch(message);
      expect(run.stderr).toMatch(/Nothing was changed\..*--no-signal/);
      expect(await schema.store.get(key), 'the claim is as it was: no decision that no waiting workflow hears of').toMatchObject({ state: 'claimed' });
    }
    const released = await cli(['release', key, '--no-signal'], { TEMPORAL_CONFIG_FILE: file, ...env });
    expect(released.code).toBe(EXIT.ok);
    expect(await schema.store.get(key)).toBeNull();
    expect(await signalsTo(workflowId)).toEqual([]);
  });
});
