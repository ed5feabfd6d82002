/**
 * The package's version, from its package.json: found by walking up from this
 * file, so it is the same from src/cli (tsx) and from dist/cjs/cli (the built
 * bin), whose depths differ. dist/cjs/package.json, which only marks the build
 * as CommonJS, has no name and is passed over.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CliError, EXIT } from './errors.js';

const PACKAGE_NAME = 'temporal-idempotency';

export function packageVersion(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const manifest = readManifest(join(dir, 'package.json'));
    if (manifest?.name === PACKAGE_NAME && typeof manifest.version === 'string') return manifest.version;
    // A broken install, not a usage error: exit 1, as any unexpected failure.
    if (dirname(dir) === dir) throw new CliError(`No package.json of ${PACKAGE_NAME} above ${fileURLToPath(import.meta.url)}.`, EXIT.failure);
  }
}

function readManifest(path: string): { name?: unknown; version?: unknown } | undefined {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as { name?: unknown; version?: unknown };
  } catch {
    return undefined; // none here (or unreadable): keep walking up
  }
}
