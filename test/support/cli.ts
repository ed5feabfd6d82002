/** Runs the real `temporal-idempotency` CLI as a child process. */
import { execFile } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BUILT_BIN = 'dist/cjs/cli/bin.js';

let cliArgs: readonly string[] | undefined;

/**
 * How to start the CLI: the built one users run (`bin` in package.json) when it is newer than every
 * file of `src` (npm test builds first), else `src` through tsx, so a run on edited sources never
 * tests a stale build. The built one starts in a third of the time: the CLI tests spawn hundreds.
 * Given a TypeScript file (a worker config fixture, as a flag or in the environment), through tsx, which can load it.
 */
export function cliArgv(args: readonly string[] = [], env: Record<string, string> = {}): readonly string[] {
  const fromSource = ['--import', 'tsx', 'src/cli/bin.ts'];
  if ([...args, ...Object.values(env)].some((value) => value.endsWith('.ts'))) return fromSource;
  return (cliArgs ??= newestIn(join(ROOT, 'src')) < modifiedAt(join(ROOT, BUILT_BIN)) ? [BUILT_BIN] : fromSource);
}

function modifiedAt(path: string): number {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return -Infinity;
  }
}

function newestIn(dir: string): number {
  return Math.max(
    ...readdirSync(dir, { withFileTypes: true }).map((entry) =>
      entry.isDirectory() ? newestIn(join(dir, entry.name)) : modifiedAt(join(dir, entry.name)),
    ),
  );
}

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
      [...(options.nodeFlags ?? []), ...cliArgv(args, env), ...args],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: inject('databaseUrl'), ...env }, maxBuffer: 512 * 1024 * 1024 },
      (error, stdout, stderr) => resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin?.on('error', () => undefined); // a CLI that exits before reading its input
    child.stdin?.end(options.input);
  });
}
