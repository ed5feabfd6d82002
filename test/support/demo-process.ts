/**
 * `npm run demo -- --keep-open` as a child process in its own process group
 * (like a shell's foreground job), for the tests that start it, read what it
 * prints, signal it and check that it leaves nothing behind. Its script is run
 * directly, not through `npm run`: npm reports a Ctrl-C as its own death by
 * SIGINT, whatever the script's exit code.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Generous: on a loaded 2-core machine the dev server's own shutdown has taken over 20 s. */
export const STOP_WITHIN_MS = 60_000;

export interface DemoExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** Since the last `signal()`. */
  readonly afterMs: number;
}

export interface DemoProcess {
  readonly pid: number;
  readonly exited: Promise<DemoExit>;
  /** Standard output so far: what a person reads. */
  stdout(): string;
  /** Both streams so far, for failure messages. */
  output(): string;
  /** Resolves with the stream so far once it matches `pattern` (standard output unless `stream` is 'both'). */
  waitFor(pattern: RegExp, timeoutMs: number, stream?: 'stdout' | 'both'): Promise<string>;
  signal(signal: NodeJS.Signals, target: 'group' | 'process'): void;
}

export function startDemo(env: NodeJS.ProcessEnv): DemoProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/demo.ts', '--keep-open'], {
    cwd: ROOT,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const text = { stdout: '', both: '' };
  const listeners = new Set<() => void>();
  const append = (fromStdout: boolean) => (chunk: Buffer) => {
    if (fromStdout) text.stdout += chunk.toString();
    text.both += chunk.toString();
    for (const listener of listeners) listener();
  };
  child.stdout.on('data', append(true));
  child.stderr.on('data', append(false));
  let signalledAt = 0;
  const exited = new Promise<DemoExit>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, afterMs: Date.now() - signalledAt })),
  );
  return {
    pid: child.pid!,
    exited,
    stdout: () => text.stdout,
    output: () => text.both,
    waitFor: (pattern, timeoutMs, stream = 'stdout') =>
      new Promise<string>((resolve, reject) => {
        const check = () => {
          if (!pattern.test(text[stream])) return;
          cleanUp();
          resolve(text[stream]);
        };
        const fail = (why: string) => () => {
          cleanUp();
          reject(new Error(`${why}:\n${text.both}`));
        };
        const timer = setTimeout(fail(`The demo printed nothing matching ${pattern} within ${timeoutMs} ms`), timeoutMs);
        const onExit = fail(`The demo exited before printing ${pattern}`);
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
