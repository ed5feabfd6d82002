/**
 * Runs the example worker (scripts/example-worker.ts) as a real child process,
 * so a test can kill it with SIGKILL mid-call.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';

export interface WorkerProcess {
  readonly pid: number;
  /** Resolves when the process has exited, with its signal if it was killed. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal: NodeJS.Signals): void;
  output(): string;
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export async function spawnExampleWorker(options: { taskQueue: string; vendorUrl: string; schema: string }): Promise<WorkerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/example-worker.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      DATABASE_URL: inject('databaseUrl'),
      WORKFLOW_BUNDLE: inject('workflowBundlePath'),
      TASK_QUEUE: options.taskQueue,
      VENDOR_URL: options.vendorUrl,
      IDEMPOTENCY_SCHEMA: options.schema,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  await waitForReady(child, exited, () => output);
  return { pid: child.pid!, exited, kill: (signal) => void child.kill(signal), output: () => output };
}

async function waitForReady(child: ChildProcess, exited: Promise<unknown>, output: () => string): Promise<void> {
  const ready = new Promise<void>((resolve) => {
    const onData = () => {
      if (output().includes('worker ready')) {
        child.stdout?.off('data', onData);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
  });
  const failed = exited.then(() => {
    throw new Error(`The example worker exited before it was ready:\n${output()}`);
  });
  const timedOut = new Promise<never>((_, reject) => {
    const timer = setTimeout(() => reject(new Error(`The example worker was not ready after 60 s:\n${output()}`)), 60_000);
    void ready.finally(() => clearTimeout(timer));
  });
  await Promise.race([ready, failed, timedOut]);
}
