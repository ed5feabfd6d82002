/**
 * Every TypeScript block of the README, as the package ships it, compiled in
 * the ES module fixture: each block is its own module (a reader pastes one at
 * a time), next to readme/prelude.d.ts, which declares only the reader's own
 * things the examples assume (their activities, their vendor's SDK). Library
 * and Node names must be imported by the block itself.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CommandFailed, runNode } from '../exec.js';
import type { Fixture } from '../fixture.js';
import { typescriptBlocks } from '../readme-blocks.js';

export interface ReadmeReport {
  readonly compiled: number;
  readonly skipped: ReadonlyArray<{ readonly line: number; readonly reason: string }>;
}

export async function compileReadmeBlocks(fixture: Fixture): Promise<ReadmeReport> {
  const readme = await readFile(join(fixture.dir, 'node_modules', 'temporal-idempotency', 'README.md'), 'utf8');
  const { compiled, skipped } = typescriptBlocks(readme);
  if (compiled.length === 0) throw new Error('README.md has no TypeScript block to compile.');
  await mkdir(join(fixture.dir, 'readme'), { recursive: true });
  for (const block of compiled) {
    // `export {}` makes a block without imports a module too, so top-level await and its names stay its own.
    await writeFile(join(fixture.dir, 'readme', `line-${block.line}.ts`), `${block.code}export {};\n`);
  }
  try {
    await runNode([join(fixture.dir, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.readme.json'], { cwd: fixture.dir });
  } catch (error) {
    if (!(error instanceof CommandFailed)) throw error;
    throw new Error(`README.md blocks do not compile (readme/line-N.ts is the block whose fence opens on line N):\n${error.message}`);
  }
  return { compiled: compiled.length, skipped };
}
