/** A copy of the working tree to install other versions into, leaving this checkout's node_modules alone. */
import { execFileSync } from 'node:child_process';
import { cp, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';

/** Tracked and untracked files that are not ignored: what this checkout would commit, without node_modules, dist or caches. */
export async function copyWorkingTree(root: string, to: string): Promise<void> {
  await rm(to, { recursive: true, force: true });
  const listed = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8' });
  for (const file of listed.split('\0').filter(Boolean)) {
    await cp(join(root, file), join(to, file), { force: true }).catch((error: NodeJS.ErrnoException) => {
      // Deleted in the working tree but still in the index: the copy matches the working tree.
      if (error.code !== 'ENOENT') throw error;
    });
  }
}

export async function assertInstalled(dir: string, expected: Record<string, string>): Promise<void> {
  const [difference] = await installedDifferences(dir, expected);
  if (difference) throw new Error(`${difference} in the copy`);
}

/** Each package of `expected` installed in `dir` at another version, as `name is X, not Y`. */
export async function installedDifferences(dir: string, expected: Record<string, string>): Promise<string[]> {
  const differences: string[] = [];
  for (const [name, version] of Object.entries(expected)) {
    const { version: installed } = JSON.parse(await readFile(join(dir, 'node_modules', name, 'package.json'), 'utf8')) as { version: string };
    if (installed !== version) differences.push(`${name} is ${installed}, not ${version}`);
  }
  return differences;
}
