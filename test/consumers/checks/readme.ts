/**
 * Every TypeScript block of the README and of every page under docs/, as the
 * package ships them, compiled as a reader who pastes it would: each block is
 * its own module, written twice,
 * as an ES module (`.mts`) and as CommonJS (`.cts`), in the ES module fixture,
 * and must compile as at least one of them (the README shows both kinds of
 * project). Beside them, readme/prelude.d.ts and readme/activities.ts declare
 * only the reader's own things the examples assume (their activities, their
 * vendor's SDK); a block that uses a library or Node name must import it.
 */
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CommandFailed, runNode } from '../exec.js';
import type { Fixture } from '../fixture.js';
import { typescriptBlocks } from '../readme-blocks.js';

const VARIANTS = { mts: 'as an ES module', cts: 'as CommonJS' } as const;
type Variant = keyof typeof VARIANTS;

export interface ReadmeReport {
  readonly compiled: ReadonlyArray<{ readonly page: string; readonly line: number; readonly as: readonly string[] }>;
  readonly skipped: ReadonlyArray<{ readonly page: string; readonly line: number; readonly reason: string }>;
}

export async function compileReadmeBlocks(fixture: Fixture): Promise<ReadmeReport> {
  const shipped = join(fixture.dir, 'node_modules', 'temporal-idempotency');
  const pages = ['README.md', ...(await readdir(join(shipped, 'docs'))).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];
  const blocks: Array<{ page: string; line: number; file: string }> = [];
  const skipped: Array<{ page: string; line: number; reason: string }> = [];
  await mkdir(join(fixture.dir, 'readme'), { recursive: true });
  for (const page of pages) {
    const found = typescriptBlocks(await readFile(join(shipped, page), 'utf8'));
    skipped.push(...found.skipped.map((block) => ({ page, ...block })));
    for (const block of found.compiled) {
      const file = `${page.replace(/\W+/g, '-')}-line-${block.line}`;
      blocks.push({ page, line: block.line, file });
      for (const variant of Object.keys(VARIANTS)) {
        // `export {}` makes a block without imports a module too, so top-level await and its names stay its own.
        await writeFile(join(fixture.dir, 'readme', `${file}.${variant}`), `${block.code}export {};\n`);
      }
    }
  }
  if (!blocks.some((block) => block.page === 'README.md')) throw new Error('README.md has no TypeScript block to compile.');
  const errors = errorsByFile(await tscOutput(fixture));
  const failing: string[] = [];
  const report: Array<{ page: string; line: number; as: string[] }> = [];
  for (const { page, line, file } of blocks) {
    const passing = (Object.keys(VARIANTS) as Variant[]).filter((variant) => !errors.has(`readme/${file}.${variant}`));
    if (passing.length === 0) {
      const text = (Object.keys(VARIANTS) as Variant[]).map((variant) => `  ${VARIANTS[variant]}:\n${errors.get(`readme/${file}.${variant}`)!.join('\n')}`);
      failing.push(`the block of ${page} at line ${line} compiles neither as an ES module nor as CommonJS:\n${text.join('\n')}`);
    }
    report.push({ page, line, as: passing.map((variant) => VARIANTS[variant]) });
  }
  const elsewhere = [...errors.keys()].filter((file) => !/^readme\/[\w-]+-line-\d+\.[mc]ts$/.test(file));
  if (elsewhere.length > 0) failing.push(`errors outside the blocks:\n${elsewhere.map((file) => errors.get(file)!.join('\n')).join('\n')}`);
  if (failing.length > 0) throw new Error(`Documentation blocks do not compile (line N is where the block's fence opens):\n${failing.join('\n')}`);
  return { compiled: report, skipped };
}

async function tscOutput(fixture: Fixture): Promise<string> {
  try {
    await runNode([join(fixture.dir, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.readme.json', '--pretty', 'false'], { cwd: fixture.dir });
    return '';
  } catch (error) {
    if (!(error instanceof CommandFailed)) throw error;
    return error.message;
  }
}

/** tsc's `file(line,col): error TS…` lines, by file; a line without a file (a config error) counts under "tsc". */
function errorsByFile(output: string): Map<string, string[]> {
  const errors = new Map<string, string[]>();
  for (const line of output.split('\n')) {
    if (!/error TS\d+/.test(line)) continue;
    const file = /^(\S+?)\(\d+,\d+\): error/.exec(line)?.[1] ?? 'tsc';
    errors.set(file, [...(errors.get(file) ?? []), `    ${line}`]);
  }
  return errors;
}
