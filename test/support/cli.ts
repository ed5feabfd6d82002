/** Runs the real `temporal-idempotency` CLI as a child process. */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CliOptions {
  /** Written to the CLI's standard input, which is then closed. */
  readonly input?: string | Buffer;
  /** Node flags for the CLI's process, e.g. a heap limit. */
  readonly nodeFlags?: readonly string[];
}

export function runCli(args: readonly string[], env: Record<string, string> = {}, options: CliOptions = {}): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [...(options.nodeFlags ?? []), '--import', 'tsx', 'src/cli/bin.ts', ...args],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: inject('databaseUrl'), ...env }, maxBuffer: 512 * 1024 * 1024 },
      (error, stdout, stderr) => resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin?.on('error', () => undefined); // a CLI that exits before reading its input
    child.stdin?.end(options.input);
  });
}
