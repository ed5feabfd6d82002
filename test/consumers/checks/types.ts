/**
 * TypeScript as the consumer runs it: every entry's types resolve under the
 * fixture's module settings, and the library's own declarations have no
 * errors there (skipLibCheck, which the fixtures set as most projects do,
 * would otherwise turn a broken import in them into a silent `any`).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CommandFailed, runNode } from '../exec.js';
import type { Fixture } from '../fixture.js';

const PACKAGE = 'temporal-idempotency';

export interface Tsconfig {
  readonly file: string;
  /** Compiled to run (lib/) or bundle (lib-commonjs/), or only typechecked. */
  readonly emits: boolean;
}

/**
 * The fixture's tsconfig files. CommonJS is checked as Temporal's samples set it up
 * (@tsconfig/node22: `module: nodenext`, `moduleResolution: node16`), as its releases
 * before 22.0.2 did (`module: node16`), and as `module: commonjs` (node10 resolution).
 */
export function tsconfigsOf(fixture: Fixture): Tsconfig[] {
  if (fixture.kind === 'esm') return [{ file: 'tsconfig.json', emits: true }];
  return [
    { file: 'tsconfig.json', emits: true },
    { file: 'tsconfig.node16.json', emits: false },
    { file: 'tsconfig.commonjs.json', emits: true },
  ];
}

/** Writes src/entry-types.ts, naming every subpath the installed package exports, so tsc must resolve each. */
export async function writeEntryTypes(fixture: Fixture): Promise<string[]> {
  const manifest = JSON.parse(await readFile(join(fixture.dir, 'node_modules', PACKAGE, 'package.json'), 'utf8')) as {
    exports: Record<string, unknown>;
  };
  const specifiers = Object.keys(manifest.exports)
    .filter((subpath) => subpath !== './package.json')
    .map((subpath) => (subpath === '.' ? PACKAGE : `${PACKAGE}${subpath.slice(1)}`));
  const lines = specifiers.map((specifier, index) => `import type * as entry${index} from '${specifier}';`);
  const source = [
    '// Written by the consumer tests from the installed package.json: each entry must resolve with types.',
    ...lines,
    `export type Entries = [${specifiers.map((_, index) => `typeof entry${index}`).join(', ')}];`,
    '',
  ].join('\n');
  await writeFile(join(fixture.dir, 'src', 'entry-types.ts'), source);
  return specifiers;
}

export async function typecheck(fixture: Fixture, tsconfig: string): Promise<void> {
  await tsc(fixture, ['-p', tsconfig, '--noEmit']);
}

export async function compile(fixture: Fixture, tsconfig: string): Promise<void> {
  await tsc(fixture, ['-p', tsconfig]);
}

/** Errors in other packages' declarations are theirs; only the library's own fail this check. */
export async function checkOwnDeclarations(fixture: Fixture, tsconfig: string): Promise<void> {
  try {
    await tsc(fixture, ['-p', tsconfig, '--noEmit', '--skipLibCheck', 'false']);
  } catch (error) {
    if (!(error instanceof CommandFailed)) throw error;
    const ours = error.message.split('\n').filter((line) => line.includes(`node_modules/${PACKAGE}/`));
    if (ours.length > 0) throw new Error(`The library's declarations fail under ${tsconfig}:\n${ours.join('\n')}`);
  }
}

function tsc(fixture: Fixture, args: readonly string[]) {
  return runNode([join(fixture.dir, 'node_modules', 'typescript', 'bin', 'tsc'), ...args], { cwd: fixture.dir });
}
