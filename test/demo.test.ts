/**
 * `npm run demo -- --keep-open`, run as a person runs it: a real process on its
 * own embedded Postgres and Temporal dev server, stopped with Ctrl-C (SIGINT to
 * its whole process group, as a terminal sends it) or with SIGTERM to it alone.
 * Either way nothing may be left behind: no data directory, no server, no port.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { isRunning, portIsFree, processesLeftInGroup } from './support/processes.js';
import { STOP_WITHIN_MS, startDemo } from './support/demo-process.js';
import type { DemoProcess } from './support/demo-process.js';

/** The demo must start its own servers: those are what it has to clean up. */
function demoEnvironment(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'TEMPORAL_UI_URL']) delete env[name];
  return env;
}

/** What the demo printed about the servers and processes it started. */
function startedBy(output: string) {
  const match = (pattern: RegExp) => pattern.exec(output)?.[1];
  const portOf = (found: string | undefined) => (found ? Number(found) : undefined);
  const ports = {
    postgres: portOf(match(/DATABASE_URL=\S+:(\d+)\//)),
    temporal: portOf(match(/TEMPORAL_ADDRESS=[\d.]+:(\d+)/)),
    webUi: portOf(match(/Web UI http:\/\/[\d.]+:(\d+)/)),
    vendor: portOf(match(/VENDOR_URL=http:\/\/[\d.]+:(\d+)/)),
  };
  return {
    dataDirectory: match(/its data in (\S+)/),
    ports,
    workerPids: [...output.matchAll(/running as process (\d+)/g)].map((found) => Number(found[1])),
  };
}

async function expectNothingLeft(demo: DemoProcess): Promise<void> {
  const output = demo.output();
  const started = startedBy(output);
  expect(await processesLeftInGroup(demo.pid)).toBe('');
  expect(started.dataDirectory, output).toBeDefined();
  expect(existsSync(started.dataDirectory!), `${started.dataDirectory} still exists`).toBe(false);
  for (const [server, port] of Object.entries(started.ports)) {
    expect(port, `the demo printed no port for ${server}:\n${output}`).toBeGreaterThan(0);
    expect(await portIsFree(port!), `${server}'s port ${port} is still taken`).toBe(true);
  }
  for (const pid of started.workerPids) expect(isRunning(pid), `worker process ${pid} still runs`).toBe(false);
}

describe('npm run demo -- --keep-open', () => {
  it('on Ctrl-C, stops its servers, deletes its Postgres data and exits 0', async () => {
    const demo = startDemo(demoEnvironment());
    try {
      await demo.waitFor(/Servers stay up until/, 240_000, 'both');
      demo.signal('SIGINT', 'group');
      const exit = await Promise.race([demo.exited, new Promise<null>((resolve) => setTimeout(() => resolve(null), STOP_WITHIN_MS))]);
      if (exit === null) {
        const left = await processesLeftInGroup(demo.pid);
        expect.fail(`the demo did not exit within ${STOP_WITHIN_MS} ms of Ctrl-C; still running:\n${left}\n\n${demo.output()}`);
      }
      expect(exit, demo.output()).toMatchObject({ code: 0, signal: null });
      await expectNothingLeft(demo);
    } finally {
      if (isRunning(demo.pid)) process.kill(-demo.pid, 'SIGKILL');
    }
  }, 300_000);

  it('on SIGTERM while its scenes still run, stops its servers and worker, deletes its Postgres data and exits 143', async () => {
    const demo = startDemo(demoEnvironment());
    try {
      await demo.waitFor(/Worker A is running as process \d+/, 180_000, 'both');
      demo.signal('SIGTERM', 'process');
      const exit = await Promise.race([demo.exited, new Promise<null>((resolve) => setTimeout(() => resolve(null), STOP_WITHIN_MS))]);
      expect(exit, `the demo did not exit within ${STOP_WITHIN_MS} ms of SIGTERM:\n${demo.output()}`).not.toBeNull();
      expect(exit, demo.output()).toMatchObject({ code: 128 + 15, signal: null });
      await expectNothingLeft(demo);
    } finally {
      if (isRunning(demo.pid)) process.kill(-demo.pid, 'SIGKILL');
    }
  }, 300_000);
});
