/**
 * The versions a fixture installs, read from the library's own package.json
 * so the tests follow the declared peer ranges: the oldest end is each
 * range's lower bound, the newest end the newest release the range admits,
 * asked from the registry at run time (so a new SDK release is tested as soon
 * as users can get it).
 */
import { readFile } from 'node:fs/promises';
import { run } from './exec.js';

export type End = 'oldest' | 'newest';

/** The SDK packages a user lists, as Temporal's samples do; @temporalio/common arrives as their dependency. */
export const SDK_PACKAGES = ['@temporalio/activity', '@temporalio/client', '@temporalio/worker', '@temporalio/workflow'] as const;

export interface Versions {
  readonly sdk: string;
  readonly pg: string;
  readonly typesPg: string;
  /** The library's own TypeScript and Node typings, at both ends. */
  readonly typescript: string;
  readonly typesNode: string;
}

/** The library's package.json: the fields these tests read by name, and the rest. */
export interface Manifest extends Record<string, unknown> {
  readonly peerDependencies: Record<string, string>;
  readonly devDependencies: Record<string, string>;
}

export async function readManifest(root: string): Promise<Manifest> {
  return JSON.parse(await readFile(`${root}/package.json`, 'utf8')) as Manifest;
}

export async function versionsAt(end: End, manifest: Manifest, root: string): Promise<Versions> {
  const pick = (name: string) => (end === 'oldest' ? lowerBound(name, peerRange(manifest, name)) : newestIn(name, peerRange(manifest, name), root));
  const [sdk, pg, typesPg] = await Promise.all([pick('@temporalio/worker'), pick('pg'), pick('@types/pg')]);
  for (const name of SDK_PACKAGES) {
    if (peerRange(manifest, name) !== peerRange(manifest, '@temporalio/worker')) {
      throw new Error(`${name}'s peer range differs from @temporalio/worker's: the SDK packages are released together.`);
    }
  }
  return { sdk, pg, typesPg, typescript: devVersion(manifest, 'typescript'), typesNode: devVersion(manifest, '@types/node') };
}

function peerRange(manifest: Manifest, name: string): string {
  const range = manifest.peerDependencies[name];
  if (!range) throw new Error(`package.json has no peer dependency on ${name}.`);
  return range;
}

function devVersion(manifest: Manifest, name: string): string {
  const version = manifest.devDependencies[name];
  if (!version) throw new Error(`package.json has no dev dependency on ${name}.`);
  return version;
}

/** Only caret ranges: their lower bound is a release a user can install, which the oldest end must be. */
function lowerBound(name: string, range: string): string {
  const match = /^\^(\d+\.\d+\.\d+)$/.exec(range);
  if (!match?.[1]) throw new Error(`Peer range ${name}@${range} is not ^x.y.z; teach test/consumers/versions.ts its lower bound.`);
  return match[1];
}

async function newestIn(name: string, range: string, cwd: string): Promise<string> {
  const { stdout } = await run('npm', ['view', `${name}@${range}`, 'version', '--json', '--prefer-online'], { cwd });
  const found = JSON.parse(stdout) as string | string[];
  const newest = (Array.isArray(found) ? found : [found]).sort(compareReleases).at(-1);
  if (!newest) throw new Error(`The registry has no release of ${name}@${range}.`);
  return newest;
}

/** x.y.z releases only: a caret range admits no prerelease. */
function compareReleases(a: string, b: string): number {
  const [pa, pb] = [a, b].map((version) => version.split('.').map(Number));
  for (let index = 0; index < 3; index++) {
    const difference = (pa?.[index] ?? 0) - (pb?.[index] ?? 0);
    if (difference !== 0) return difference;
  }
  return 0;
}
