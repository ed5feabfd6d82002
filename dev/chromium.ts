/**
 * Finds Debian's Chromium for the Web UI test, installing it with apt when it
 * is missing and this process may (root, apt-get present). Returns the path,
 * or the reason there is none, so the test can skip saying why.
 */
import { execFile } from 'node:child_process';
import { access, constants } from 'node:fs/promises';
import { promisify } from 'node:util';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser'];
const run = promisify(execFile);

export async function ensureChromium(log: (line: string) => void): Promise<{ path: string } | { reason: string }> {
  const explicit = process.env['CHROMIUM_PATH'];
  for (const path of explicit ? [explicit] : CANDIDATES) {
    if (await executable(path)) return { path };
  }
  if (explicit) return { reason: `CHROMIUM_PATH=${explicit} is not executable` };
  if (process.getuid?.() !== 0) return { reason: 'Chromium is not installed and installing it needs root (apt-get install chromium)' };
  if (!(await executable('/usr/bin/apt-get'))) return { reason: 'Chromium is not installed and there is no apt-get to install it' };
  log('Installing Debian\'s chromium with apt-get for the Web UI test (once)…');
  try {
    await run('apt-get', ['update', '-qq'], { maxBuffer: 64 * 1024 * 1024 });
    await run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'chromium'], {
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (error) {
    return { reason: `apt-get install chromium failed: ${(error as { stderr?: string }).stderr?.slice(-500) ?? String(error)}` };
  }
  return (await executable(CANDIDATES[0]!)) ? { path: CANDIDATES[0]! } : { reason: 'apt-get installed chromium, but /usr/bin/chromium is missing' };
}

async function executable(path: string): Promise<boolean> {
  return access(path, constants.X_OK).then(
    () => true,
    () => false,
  );
}
