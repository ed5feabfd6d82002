/**
 * Finds the `temporal` CLI, which runs the dev server (Web UI included):
 * TEMPORAL_CLI_PATH, then PATH, then our cache, then a one-time `go install`
 * into that cache. Returns null when none works, so the caller can fall back
 * to @temporalio/testing's own download (machines with internet and no Go).
 */
import { execFile } from 'node:child_process';
import { access, constants, mkdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';

/** v1.6.0 and later carry a `replace` directive in go.mod, which `go install pkg@version` rejects. */
export const TEMPORAL_CLI_VERSION = 'v1.5.1';
const GO_PACKAGE = `github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}`;

const run = promisify(execFile);

export function cliCacheDir(): string {
  const cacheRoot = process.env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache');
  return join(cacheRoot, 'temporal-idempotency', `temporal-cli-${TEMPORAL_CLI_VERSION}`);
}

export async function findTemporalCli(log: (line: string) => void = () => undefined): Promise<string | null> {
  const explicit = process.env['TEMPORAL_CLI_PATH'];
  if (explicit) {
    if (await isExecutable(explicit)) return explicit;
    throw new Error(`TEMPORAL_CLI_PATH=${explicit} is not an executable file.`);
  }
  const onPath = await findOnPath('temporal');
  if (onPath) return onPath;
  const cached = join(cliCacheDir(), 'temporal');
  if (await isExecutable(cached)) return cached;
  const go = await findOnPath('go');
  if (!go) return null;
  return buildWithGo(go, cached, log);
}

async function buildWithGo(go: string, target: string, log: (line: string) => void): Promise<string> {
  const started = Date.now();
  log(`Building the Temporal CLI once with \`go install ${GO_PACKAGE}\` into ${cliCacheDir()} (a few minutes cold)…`);
  await mkdir(cliCacheDir(), { recursive: true });
  try {
    await run(go, ['install', GO_PACKAGE], {
      env: { ...process.env, GOBIN: cliCacheDir(), CGO_ENABLED: process.env['CGO_ENABLED'] ?? '0' },
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? '';
    throw new Error(`go install ${GO_PACKAGE} failed:\n${stderr.slice(-4000)}`, { cause: error });
  }
  log(`Built the Temporal CLI in ${((Date.now() - started) / 1000).toFixed(0)} s: ${target}`);
  return target;
}

async function findOnPath(name: string): Promise<string | null> {
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    if (dir && (await isExecutable(join(dir, name)))) return join(dir, name);
  }
  return null;
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
