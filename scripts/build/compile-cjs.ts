/**
 * Compiles src/ to CommonJS in dist/cjs, file by file, with esbuild: the
 * source is ES modules and may use `import.meta.url` (CommonJS has none), so
 * each file that does gets it from its own `__filename`, and every file stays
 * in strict mode, as it was as an ES module. tsc cannot do the former
 * (it refuses `import.meta` under `module: commonjs`); it writes only the
 * declarations (tsconfig.declarations.json).
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { transform } from 'esbuild';

const IMPORT_META_URL = '__import_meta_url';
const SHIM = `const ${IMPORT_META_URL} = require('node:url').pathToFileURL(__filename).href;`;

export async function compileCommonJs(sourceDir: string, outDir: string): Promise<number> {
  const files = await sourceFiles(sourceDir);
  for (const file of files) {
    const source = await readFile(file, 'utf8');
    const path = relative(sourceDir, file);
    const output = join(outDir, path.replace(/\.ts$/, '.js'));
    const { code, map } = await transform(source, {
      loader: 'ts',
      format: 'cjs',
      platform: 'node',
      target: 'node20',
      sourcemap: 'external',
      sourcefile: relative(dirname(output), file),
      define: { 'import.meta.url': IMPORT_META_URL },
      // ES modules are strict; CommonJS is only when it says so.
      banner: source.includes('import.meta.url') ? `'use strict';\n${SHIM}` : `'use strict';`,
    });
    if (/\bimport\.meta\b/.test(code)) throw new Error(`${path} uses import.meta beyond import.meta.url, which CommonJS cannot give it.`);
    await mkdir(dirname(output), { recursive: true });
    await writeFile(output, `${code}//# sourceMappingURL=${output.split('/').pop()}.map\n`);
    await writeFile(`${output}.map`, map);
  }
  return files.length;
}

async function sourceFiles(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...(await sourceFiles(path)));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) found.push(path);
  }
  return found;
}
