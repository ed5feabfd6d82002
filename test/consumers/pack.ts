/**
 * Builds and packs the library as `npm publish` would, and checks the tarball
 * holds every file package.json points at (exports, typesVersions, main,
 * types, bin) plus the license and changelog, and no tests.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { run } from './exec.js';

export interface Packed {
  readonly tarball: string;
  readonly files: readonly string[];
}

interface PackReport {
  readonly filename: string;
  readonly files: ReadonlyArray<{ readonly path: string }>;
}

export async function pack(root: string, destination: string): Promise<Packed> {
  await mkdir(destination, { recursive: true });
  // Built just before by the caller; --ignore-scripts keeps the build's output out of the JSON report.
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', destination], { cwd: root });
  const [report] = JSON.parse(stdout) as PackReport[];
  if (!report) throw new Error(`npm pack reported nothing:\n${stdout}`);
  return { tarball: join(destination, report.filename), files: report.files.map((file) => file.path) };
}

export function checkContents(files: readonly string[], manifest: Record<string, unknown>): void {
  const present = new Set(files);
  const referenced = new Set<string>();
  collectPaths([manifest['main'], manifest['types'], manifest['exports'], manifest['typesVersions'], manifest['bin']], referenced);
  const missing = [...referenced, 'LICENSE', 'CHANGELOG.md', 'README.md'].filter((path) => !present.has(path));
  if (missing.length > 0) throw new Error(`The tarball lacks files package.json or users need: ${missing.join(', ')}`);
  const tests = files.filter((path) => /(^|\/)test\/|\.test\.[cm]?[jt]s$/.test(path));
  if (tests.length > 0) throw new Error(`The tarball ships tests: ${tests.slice(0, 5).join(', ')}`);
}

/** Every string in the value that names a file of the package ("./dist/…"). */
function collectPaths(value: unknown, into: Set<string>): void {
  if (typeof value === 'string') {
    if (value.startsWith('./')) into.add(value.slice(2));
  } else if (Array.isArray(value)) {
    for (const item of value) collectPaths(item, into);
  } else if (value && typeof value === 'object') {
    for (const item of Object.values(value)) collectPaths(item, into);
  }
}
