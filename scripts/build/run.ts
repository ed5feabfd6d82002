/**
 * `npm run build`: the library and its CLI as CommonJS (dist/cjs: esbuild for
 * the code, tsc for the declarations), ES module wrappers for the entries
 * (dist/esm), and package.json's entry fields derived from ENTRIES. Starts
 * from an empty dist, so a deleted source file never ships.
 */
import { execFileSync } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileCommonJs } from './compile-cjs.js';
import { ENTRIES } from './entries.js';
import { writeEsmWrappers } from './esm-wrappers.js';
import { CJS_DIR } from './layout.js';
import { syncPackageJson } from './sync-package-json.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

async function step(name: string, work: () => unknown): Promise<void> {
  const started = Date.now();
  await work();
  console.log(`build: ${name} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
}

await step('clean dist', () => rm(`${root}/dist`, { recursive: true, force: true }));
await step('declarations', () => execFileSync(process.execPath, [tsc, '-p', 'tsconfig.declarations.json'], { cwd: root, stdio: 'inherit' }));
await step('CommonJS', async () => {
  console.log(`build: ${await compileCommonJs(join(root, 'src'), join(root, CJS_DIR))} files`);
  // The package says "type": "module"; this marks dist/cjs's .js (and .d.ts) files as CommonJS for Node and TypeScript.
  await writeFile(join(root, CJS_DIR, 'package.json'), `${JSON.stringify({ type: 'commonjs' }, null, 2)}\n`);
});
await step('ES module wrappers', () => writeEsmWrappers(root, ENTRIES));
await step('package.json entry fields', () => syncPackageJson(root, ENTRIES));
