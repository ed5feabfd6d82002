/**
 * `npm run demo -- --keep-open`, run as a person runs it: a real process on its
 * own embedded Postgres and Temporal dev server, stopped with Ctrl-C (SIGINT to
 * its whole process group, as a terminal sends it) or with SIGTERM to it alone.
 * Either way nothing may be left behind: no data directory, no server, no port.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const STOP_WITHIN_MS = 30_000;

interface DemoProcess {
  readonly pid: number;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; afterMs: number }>;
  output(): string;
  /** Resolves with the output so far once it matches `pattern`. */
  waitFor(pattern: RegExp, timeoutMs: number): Promise<string>;
  signal(signal: NodeJS.Signals, target: 'group' | 'process'): void;
}

/** The demo's own script, not `npm run`: npm reports a Ctrl-C as its own death by SIGINT, whatever the script's exit code. */
function startDemo(): DemoProcess {
  const env = { ...process.env };
  // The demo must start its own servers: those are what it has to clean up.
  for (const name of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'TEMPORAL_UI_URL']) delete env[name];
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/demo.ts', '--keep-open'], {
    cwd: ROOT,
    env,
    detached: true, // its own process group, like a shell's foreground job
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const listeners = new Set<() => void>();
  const append = (chunk: Buffer) => {
    output += chunk.toString();
    for (const listener of listeners) listener();
  };
  child.stdout.on('data', append);
  child.stderr.on('data', append);
  let signalledAt = 0;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; afterMs: number }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, afterMs: Date.now() - signalledAt })),
  );
  return {
    pid: child.pid!,
    exited,
    output: () => output,
    waitFor: (pattern, timeoutMs) =>
      new Promise<string>((resolve, reject) => {
        const check = () => {
          if (!pattern.test(output)) return;
          cleanUp();
          resolve(output);
        };
        const timer = setTimeout(() => {
          cleanUp();
          reject(new Error(`The demo printed nothing matching ${pattern} within ${timeoutMs} ms:\n${output}`));
        }, timeoutMs);
        const onExit = () => {
          cleanUp();
          reject(new Error(`The demo exited before printing ${pattern}:\n${output}`));
        };
        const cleanUp = () => {
          clearTimeout(timer);
          listeners.delete(check);
          child.off('exit', onExit);
        };
        listeners.add(check);
        child.once('exit', onExit);
        check();
      }),
    signal: (signal, target) => {
      signalledAt = Date.now();
      process.kill(target === 'group' ? -child.pid! : child.pid!, signal);
    },
  };
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

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Every process the demo started is in its process group, whoever started it: none may outlive it (a few seconds' grace). */
async function processesLeftInGroup(groupId: number): Promise<string> {
  for (let waited = 0; waited < 5_000 && isRunning(-groupId); waited += 250) await new Promise((resolve) => setTimeout(resolve, 250));
  if (!isRunning(-groupId)) return '';
  const listing = execFileSync('ps', ['-e', '-o', 'pgid=,pid=,args='], { encoding: 'utf8' });
  const left = listing.split('\n').filter((line) => line.trim().split(/\s+/)[0] === String(groupId));
  return left.join('\n') || `(a process in group ${groupId} that ps does not show)`;
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
    const demo = startDemo();
    try {
      await demo.waitFor(/Servers stay up until/, 240_000);
      demo.signal('SIGINT', 'group');
      const exit = await Promise.race([demo.exited, new Promise<null>((resolve) => setTimeout(() => resolve(null), STOP_WITHIN_MS))]);
      expect(exit, `the demo did not exit within ${STOP_WITHIN_MS} ms of Ctrl-C:\n${demo.output()}`).not.toBeNull();
      expect(exit, demo.output()).toMatchObject({ code: 0, signal: null });
      await expectNothingLeft(demo);
    } finally {
      if (isRunning(demo.pid)) process.kill(-demo.pid, 'SIGKILL');
    }
  }, 300_000);

  it('on SIGTERM while its scenes still run, stops its servers and worker, deletes its Postgres data and exits 143', async () => {
    const demo = startDemo();
    try {
      await demo.waitFor(/Worker A is running as process \d+/, 180_000);
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
