/** The real `temporal-idempotency` CLI as a child process the harness can SIGKILL mid-command. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

export interface CliProcess {
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(): Promise<void>;
  output(): string;
}

export interface CliTargets {
  readonly databaseUrl: string;
  readonly temporalAddress: string;
  readonly schema: string;
}

export function startCli(args: readonly string[], targets: CliTargets): CliProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/bin.ts', ...args], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: targets.databaseUrl,
      TEMPORAL_ADDRESS: targets.temporalAddress,
      IDEMPOTENCY_SCHEMA: targets.schema,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return {
    exited,
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
    output: () => output,
  };
}

/** Runs a CLI command to its end; throws with its output unless it exits 0 or with one of `allowed`. Its exit code. */
export async function runCli(args: readonly string[], targets: CliTargets, allowed: readonly number[] = []): Promise<number> {
  const cli = startCli(args, targets);
  const { code, signal } = await cli.exited;
  if (code !== 0 && (code === null || !allowed.includes(code))) {
    throw new Error(`temporal-idempotency ${args.join(' ')} exited ${code ?? signal}:\n${cli.output()}`);
  }
  return code;
}
