/**
 * A fresh consumer project outside this repository: the template for its
 * module system plus the shared sources, and an `npm install` of the packed
 * tarball with one end of the peer ranges, from the shared npm cache.
 */
import { access, cp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { run } from './exec.js';
import { SDK_PACKAGES } from './versions.js';
import type { End, Versions } from './versions.js';

export type Kind = 'esm' | 'commonjs';

export interface Fixture {
  readonly name: string;
  readonly kind: Kind;
  readonly end: End;
  readonly dir: string;
}

const TEMPLATES = new URL('./fixtures/', import.meta.url);

/** Outside the repository: Node and TypeScript look up every parent's node_modules, which would hide a missing dependency. */
export async function createFixture(parent: string, kind: Kind, end: End): Promise<Fixture> {
  const name = `${kind}-${end}`;
  const dir = join(parent, name);
  await assertNoParentNodeModules(dir);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  await cp(new URL('shared/', TEMPLATES), dir, { recursive: true });
  await cp(new URL(`${kind === 'esm' ? 'esm' : 'cjs'}/`, TEMPLATES), dir, { recursive: true });
  return { name, kind, end, dir };
}

export async function install(fixture: Fixture, tarball: string, versions: Versions): Promise<void> {
  const manifestPath = join(fixture.dir, 'package.json');
  const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as Record<string, unknown>;
  const sdk = Object.fromEntries(SDK_PACKAGES.map((name) => [name, versions.sdk]));
  manifest['dependencies'] = { ...sdk, pg: versions.pg, 'temporal-idempotency': `file:${tarball}` };
  manifest['devDependencies'] = {
    '@types/node': versions.typesNode,
    '@types/pg': versions.typesPg,
    // What a user adds to unit-test activities (temporal-idempotency/testing); always the SDK's own version.
    '@temporalio/testing': versions.sdk,
    typescript: versions.typescript,
    // Temporal's TypeScript samples extend it; ^22 as they do.
    ...(fixture.kind === 'commonjs' ? { '@tsconfig/node22': '^22.0.0' } : {}),
  };
  await writeFile(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: fixture.dir });
}

async function assertNoParentNodeModules(dir: string): Promise<void> {
  for (let parent = dirname(dir); ; parent = dirname(parent)) {
    const found = await access(join(parent, 'node_modules')).then(() => true, () => false);
    if (found) throw new Error(`${parent}/node_modules exists: fixtures under it would resolve packages they do not install.`);
    if (dirname(parent) === parent) return;
  }
}
