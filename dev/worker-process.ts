/**
 * Runs the example worker (scripts/example-worker.ts) as a real child process,
 * so the demo and the crash tests can kill it with SIGKILL mid-call.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export interface WorkerProcess {
  readonly pid: number;
  /** Resolves when the process has exited, with its signal if it was killed. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal: NodeJS.Signals): void;
  output(): string;
}

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface ExampleWorkerOptions {
  readonly temporalAddress: string;
  readonly databaseUrl: string;
  readonly taskQueue: string;
  readonly vendorUrl: string;
  readonly schema?: string;
  /** Prebuilt workflow code, so the worker skips bundling. */
  readonly workflowBundlePath?: string;
  /** The interceptor's `leaseMs`; short in tests and the demo, so a dead owner is recognised quickly. */
  readonly leaseMs?: number;
  /** Activity types declared `vendorDedup`. */
  readonly vendorDedup?: readonly string[];
  /** Reconcile orphaned calls with the vendor's lookup before refusing them. */
  readonly reconcile?: boolean;
  /** Serve activities only; the workflows run on another worker. */
  readonly activitiesOnly?: boolean;
}

/** `signal`, when aborted, kills the worker (SIGTERM), also while it is still starting. */
export async function spawnExampleWorker(options: ExampleWorkerOptions, control: { signal?: AbortSignal } = {}): Promise<WorkerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/example-worker.ts'], {
    cwd: ROOT,
    ...(control.signal ? { signal: control.signal } : {}),
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: options.temporalAddress,
      DATABASE_URL: options.databaseUrl,
      TASK_QUEUE: options.taskQueue,
      VENDOR_URL: options.vendorUrl,
      ...(options.schema ? { IDEMPOTENCY_SCHEMA: options.schema } : {}),
      ...(options.workflowBundlePath ? { WORKFLOW_BUNDLE: options.workflowBundlePath } : {}),
      ...(options.leaseMs ? { IDEMPOTENCY_LEASE_MS: String(options.leaseMs) } : {}),
      ...(options.vendorDedup ? { VENDOR_DEDUP: options.vendorDedup.join(',') } : {}),
      ...(options.reconcile ? { RECONCILE: '1' } : {}),
      ...(options.activitiesOnly ? { ACTIVITIES_ONLY: '1' } : {}),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  // An abort arrives as an 'error' event (and then 'exit'); unheard, it would end this process.
  child.on('error', (error) => (output += `\n${error.message}\n`));
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  await waitForReady(child, exited, () => output);
  return { pid: child.pid!, exited, kill: (signal) => void child.kill(signal), output: () => output };
}

async function waitForReady(child: ChildProcess, exited: Promise<unknown>, output: () => string): Promise<void> {
  let onData: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      new Promise<void>((resolve) => {
        onData = () => output().includes('worker ready') && resolve();
        child.stdout?.on('data', onData);
      }),
      exited.then(() => {
        throw new Error(`The example worker exited before it was ready:\n${output()}`);
      }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`The example worker was not ready after 60 s:\n${output()}`)), 60_000);
      }),
    ]);
  } finally {
    clearTimeout(timer);
    if (onData) child.stdout?.off('data', onData);
  }
}
