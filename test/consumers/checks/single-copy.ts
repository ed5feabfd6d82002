/**
 * Exactly one copy of each Temporal SDK package in the fixture: a second
 * @temporalio/worker brings a second native bridge and Runtime, and a second
 * @temporalio/common makes `instanceof ApplicationFailure` lie.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';

interface Copy {
  readonly version: string;
  readonly dir: string;
}

/** Returns the one version of each @temporalio package found, for the log. */
export async function assertOneSdkCopy(fixtureDir: string): Promise<string> {
  const copies = new Map<string, Copy[]>();
  await collect(join(fixtureDir, 'node_modules'), copies);
  const describe = (list: readonly Copy[]) => list.map((copy) => `${copy.version} in ${relative(fixtureDir, copy.dir)}`).join(', ');
  const worker = copies.get('@temporalio/worker') ?? [];
  if (worker.length !== 1) throw new Error(`Expected one @temporalio/worker, found ${worker.length}: ${describe(worker) || 'none'}`);
  const doubled = [...copies].filter(([, list]) => list.length > 1);
  if (doubled.length > 0) {
    throw new Error(`More than one copy of: ${doubled.map(([name, list]) => `${name} (${describe(list)})`).join('; ')}`);
  }
  return [...copies].map(([name, list]) => `${name.slice('@temporalio/'.length)}@${list[0]?.version}`).sort().join(' ');
}

/** Walks node_modules, nested ones included, recording every @temporalio package. */
async function collect(nodeModules: string, copies: Map<string, Copy[]>): Promise<void> {
  for (const name of await packageNames(nodeModules)) {
    const dir = join(nodeModules, name);
    if (name.startsWith('@temporalio/')) {
      const { version } = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as { version: string };
      copies.set(name, [...(copies.get(name) ?? []), { version, dir }]);
    }
    await collect(join(dir, 'node_modules'), copies);
  }
}

/** `pg`, `@temporalio/worker`, …: the packages directly inside one node_modules folder. */
async function packageNames(nodeModules: string): Promise<string[]> {
  const names: string[] = [];
  for (const entry of await readdir(nodeModules, { withFileTypes: true }).catch(() => [])) {
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
    if (!entry.name.startsWith('@')) {
      names.push(entry.name);
      continue;
    }
    for (const scoped of await readdir(join(nodeModules, entry.name), { withFileTypes: true })) {
      if (scoped.isDirectory()) names.push(`${entry.name}/${scoped.name}`);
    }
  }
  return names;
}
