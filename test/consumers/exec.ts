/** Runs one command of a consumer test: its output is kept, and shown when it fails. */
import { execFile } from 'node:child_process';

export interface Output {
  readonly stdout: string;
  readonly stderr: string;
}

export interface RunOptions {
  readonly cwd: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly timeoutMs?: number;
}

export class CommandFailed extends Error {
  override readonly name = 'CommandFailed';
}

export function run(command: string, args: readonly string[], options: RunOptions): Promise<Output> {
  const shown = [command, ...args].join(' ');
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      {
        cwd: options.cwd,
        env: options.env ?? process.env,
        timeout: options.timeoutMs ?? 10 * 60_000,
        killSignal: 'SIGKILL',
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        if (!error) return resolve({ stdout, stderr });
        const why = error.killed ? `killed after ${options.timeoutMs ?? 600_000} ms` : `exit code ${String(error.code)}`;
        reject(new CommandFailed(`\`${shown}\` in ${options.cwd} failed (${why}):\n${stdout}${stderr}`));
      },
    );
  });
}

/** Node itself, running a file: the same binary that runs these tests. */
export function runNode(args: readonly string[], options: RunOptions): Promise<Output> {
  return run(process.execPath, args, options);
}
