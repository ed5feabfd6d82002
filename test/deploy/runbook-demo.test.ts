/**
 * The README's runbook ("A refusal happened: what now"), followed literally against
 * `npm run demo -- --keep-open`, with nothing but what the demo prints on its standard output:
 * the `export` line (DATABASE_URL, TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, VENDOR_URL) and the
 * `alias temporal=…` line, pasted into "a second shell in the checkout" (a child environment
 * with no other database or Temporal settings). Then the runbook's steps, through the real CLI
 * as the README says to run it in the checkout (`npm run cli -- …`): notice (list, show,
 * ledger), check the vendor (its lookup by key), finish (resolve with what the vendor says it
 * returned), let the workflow continue. The demo's order workflow does not wrap its calls in
 * resumable(), so the refused workflow has failed; the runbook's branch for that is a reset
 * with the `temporal` CLI the demo names, after which the workflow completes with the resolved
 * result and no call goes out again. Then Ctrl-C, and nothing of the demo may be left.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { isRunning, portIsFree, processesLeftInGroup } from '../support/processes.js';
import { STOP_WITHIN_MS, startDemo } from '../support/demo-process.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A fresh shell: this process's environment without any database, Temporal or library setting, plus `exported`. */
function shellEnvironment(exported: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (/^(DATABASE_URL|PG[A-Z]+|TEMPORAL_.*|IDEMPOTENCY_.*|VENDOR_URL)$/.test(name)) continue;
    env[name] = value;
  }
  return { ...env, ...exported };
}

/** What a person copies from the demo's output: the `export` line's variables and the `alias temporal=` path. */
function pasted(stdout: string): { exported: Record<string, string>; temporalCli: string | undefined } {
  const line = /^\s*export (.+)$/m.exec(stdout)?.[1];
  expect(line, `the demo printed no export line:\n${stdout}`).toBeDefined();
  const exported: Record<string, string> = {};
  for (const assignment of line!.trim().split(/\s+/)) {
    const at = assignment.indexOf('=');
    expect(at, `not NAME=value in the export line: ${assignment}`).toBeGreaterThan(0);
    exported[assignment.slice(0, at)] = assignment.slice(at + 1);
  }
  return { exported, temporalCli: /^\s*alias temporal=(\S+)/m.exec(stdout)?.[1] };
}

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function run(command: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd: ROOT, env, maxBuffer: 64 * 1024 * 1024, timeout: 120_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

describe('the runbook, followed literally against npm run demo -- --keep-open', () => {
  it('with only what the demo prints: list, show, ledger, the vendor’s lookup, resolve, reset; the workflow completes with the resolved result, no call goes out again; Ctrl-C leaves nothing', async () => {
    const demo = startDemo(shellEnvironment({}));
    try {
      const stdout = await demo.waitFor(/Servers stay up until/, 360_000);
      const { exported, temporalCli } = pasted(stdout);
      expect(Object.keys(exported).sort()).toEqual(['DATABASE_URL', 'TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'VENDOR_URL']);
      expect(temporalCli, `the demo printed no alias temporal= line, which the runbook's reset needs:\n${stdout}`).toBeDefined();
      const refusedKey = /The refused key is ([0-9a-f]{64}), of workflow (\S+)\./.exec(stdout);
      expect(refusedKey, stdout).not.toBeNull();
      const shell = shellEnvironment(exported);
      // "here: npm run cli -- list …": the CLI of this checkout. --silent keeps npm's banner off stdout.
      const cli = (...args: string[]) => run('npm', ['run', '--silent', 'cli', '--', ...args], shell);

      // 1. Notice: claims without an outcome, then the one claim, then the calls that went out for it.
      const table = await cli('list', '--state', 'open');
      expect({ code: table.code, stderr: table.stderr }).toEqual({ code: 0, stderr: '' });
      const listed = await cli('list', '--state', 'open', '--json');
      expect({ code: listed.code, stderr: listed.stderr }).toEqual({ code: 0, stderr: '' });
      const open = JSON.parse(listed.stdout) as { key: string; state: string; activity_type: string; workflow_id: string }[];
      expect(open).toEqual([expect.objectContaining({ state: 'unknown', activity_type: 'placeCall' })]);
      const { key, workflow_id: workflowId } = open[0]!;
      expect([key, workflowId]).toEqual([refusedKey![1], refusedKey![2]]);
      expect(table.stdout).toContain(key);

      const shown = await cli('show', key, '--json');
      expect({ code: shown.code, stderr: shown.stderr }).toEqual({ code: 0, stderr: '' });
      const claim = JSON.parse(shown.stdout);
      expect(claim).toMatchObject({
        key,
        state: 'unknown',
        activity_type: 'placeCall',
        workflow_id: workflowId,
        key_uuid: expect.stringMatching(/^[0-9a-f-]{36}$/),
        arguments: [{ to: expect.any(String), message: expect.any(String) }],
        arguments_check: "match the claim's fingerprint",
        waiting_workflows: [workflowId],
      });

      const ledger = await cli('ledger', '--key', key, '--json');
      expect({ code: ledger.code, stderr: ledger.stderr }).toEqual({ code: 0, stderr: '' });
      const calls = JSON.parse(ledger.stdout);
      // The worker killed mid-call started it and never finished it.
      expect(calls).toEqual([expect.objectContaining({ key, activity_type: 'placeCall', attempt: 1, finished_at: null, outcome: null })]);
      // Every call of the workflow that went out: one charge, one phone call.
      const byWorkflow = await cli('ledger', '--workflow', workflowId, '--json');
      expect({ code: byWorkflow.code, stderr: byWorkflow.stderr }).toEqual({ code: 0, stderr: '' });
      const workflowCalls = JSON.parse(byWorkflow.stdout) as { activity_type: string }[];
      expect(workflowCalls.map((call) => call.activity_type).sort()).toEqual(['chargeCard', 'placeCall']);

      // 2. Check the vendor: `curl "$VENDOR_URL/v1/requests/<key>"`.
      const lookup = await fetch(`${exported['VENDOR_URL']}/v1/requests/${key}`);
      expect(lookup.status).toBe(200);
      const { status, response } = (await lookup.json()) as { status: string; response: { id: string; status: string } };
      expect(status).toBe('performed');
      expect(response).toEqual({ id: expect.stringMatching(/^act_/), status: 'done' });

      // 3. Finish it: it happened, so resolve with what it returned.
      const resolved = await cli('resolve', key, '--result', JSON.stringify(response));
      expect(resolved.code, resolved.stderr).toBe(0);
      expect(resolved.stdout).toMatch(/^state\s+completed$/m);
      // 4. The demo's workflow does not wait in resumable(): it failed with the refusal, so nothing is signalled,
      //    and the CLI says what the runbook says next.
      expect(resolved.stderr).toContain(`Workflow ${workflowId} is not running`);
      expect(resolved.stderr).toContain('reset or start it again');
      const reset = await run(
        temporalCli!,
        ['workflow', 'reset', '--workflow-id', workflowId, '--type', 'FirstWorkflowTask', '--reason', `idempotency: decided ${key}`],
        shell,
      );
      expect(reset, 'temporal workflow reset').toMatchObject({ code: 0 });

      const connection = await Connection.connect({ address: exported['TEMPORAL_ADDRESS']! });
      try {
        const client = new Client({ connection, namespace: exported['TEMPORAL_NAMESPACE']! });
        const handle = client.workflow.getHandle(workflowId);
        const result = (await Promise.race([
          handle.result(),
          new Promise((_, reject) => setTimeout(() => reject(new Error('the reset workflow did not complete within 60 s')), 60_000)),
        ])) as { charge: { id: string }; call: { id: string; status: string } };
        expect(result.call).toEqual(response);
        const history = await handle.fetchHistory();
        const scheduled = (history.events ?? []).filter((event) => event.activityTaskScheduledEventAttributes);
        const failed = (history.events ?? []).filter((event) => event.activityTaskFailedEventAttributes);
        expect(scheduled.map((event) => event.activityTaskScheduledEventAttributes?.activityType?.name)).toEqual(['chargeCard', 'placeCall']);
        expect(failed).toEqual([]);
      } finally {
        await connection.close();
      }

      // No call went out again, for this key or any other of the workflow's: the ledger is as before the
      // decision, and the vendor still has the one request under the key.
      expect(JSON.parse((await cli('ledger', '--key', key, '--json')).stdout)).toEqual(calls);
      expect(JSON.parse((await cli('ledger', '--workflow', workflowId, '--json')).stdout)).toEqual(workflowCalls);
      const again = await fetch(`${exported['VENDOR_URL']}/v1/requests/${key}`);
      expect(await again.json()).toEqual({ status: 'performed', response });
      const final = JSON.parse((await cli('show', key, '--json')).stdout);
      expect(final).toMatchObject({ state: 'completed', result: response, operator_actions: [expect.objectContaining({ action: 'resolve', key })] });

      // Ctrl-C in the demo's terminal: its whole process group.
      process.kill(-demo.pid, 'SIGINT');
      const exit = await Promise.race([demo.exited, new Promise<null>((resolve) => setTimeout(() => resolve(null), STOP_WITHIN_MS))]);
      if (exit === null) expect.fail(`the demo did not exit within ${STOP_WITHIN_MS} ms of Ctrl-C; still running:\n${await processesLeftInGroup(demo.pid)}`);
      expect(exit, demo.output()).toMatchObject({ code: 0, signal: null });
      expect(await processesLeftInGroup(demo.pid)).toBe('');
      const dataDirectory = /its data in (\S+)/.exec(stdout)?.[1];
      expect(dataDirectory, stdout).toBeDefined();
      expect(existsSync(dataDirectory!), `${dataDirectory} still exists`).toBe(false);
      const ports = {
        postgres: new URL(exported['DATABASE_URL']!).port,
        temporal: exported['TEMPORAL_ADDRESS']!.split(':').pop(),
        vendor: new URL(exported['VENDOR_URL']!).port,
        webUi: /Web UI http:\/\/[\d.]+:(\d+)/.exec(stdout)?.[1],
      };
      for (const [server, port] of Object.entries(ports)) {
        expect(Number(port), `no port for ${server}`).toBeGreaterThan(0);
        expect(await portIsFree(Number(port)), `${server}'s port ${port} is still taken`).toBe(true);
      }
      for (const found of stdout.matchAll(/running as process (\d+)/g)) expect(isRunning(Number(found[1])), `worker ${found[1]} still runs`).toBe(false);
    } finally {
      if (isRunning(-demo.pid)) process.kill(-demo.pid, 'SIGKILL');
    }
  }, 600_000);
});
