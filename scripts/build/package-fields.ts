/**
 * The package.json fields derived from ENTRIES. Each entry gets both
 * conditions with their own types, so TypeScript sees an ES module under
 * `import` and a CommonJS one under `require` (node16/nodenext), and
 * `typesVersions` maps subpaths for `moduleResolution: node` (node10), which
 * ignores `exports`.
 */
import type { Entry } from './entries.js';
import { cjsFile, esmFile } from './layout.js';

export interface DerivedFields {
  readonly main: string;
  readonly types: string;
  readonly exports: Record<string, unknown>;
  readonly typesVersions: Record<string, Record<string, string[]>>;
}

export function derivedFields(entries: readonly Entry[]): DerivedFields {
  const root = entries.find((entry) => entry.subpath === '.');
  if (!root) throw new Error('ENTRIES must include the "." entry.');
  const exports: Record<string, unknown> = {};
  for (const entry of entries) {
    exports[entry.subpath] = {
      import: { types: esmFile(entry, '.d.ts'), default: esmFile(entry, '.js') },
      require: { types: cjsFile(entry, '.d.ts'), default: cjsFile(entry, '.js') },
    };
  }
  exports['./package.json'] = './package.json';
  const subpaths: Record<string, string[]> = {};
  for (const entry of entries) {
    if (entry.subpath !== '.') subpaths[entry.subpath.slice(2)] = [cjsFile(entry, '.d.ts')];
  }
  return { main: cjsFile(root, '.js'), types: cjsFile(root, '.d.ts'), exports, typesVersions: { '*': subpaths } };
}
