/**
 * Where the build puts each entry's files. The CommonJS build (dist/cjs) is the
 * only implementation; dist/esm holds one thin ES module per entry that
 * re-exports it, so `import` and `require` share one copy of the module state.
 */
import { posix } from 'node:path';
import type { Entry } from './entries.js';

export const CJS_DIR = 'dist/cjs';
export const ESM_DIR = 'dist/esm';

/** `.` → `index`, `./key` → `key`, `./workflow-interceptors` → `workflow-interceptors`. */
export function wrapperName(entry: Entry): string {
  return entry.subpath === '.' ? 'index' : entry.subpath.slice(2);
}

export function cjsFile(entry: Entry, extension: '.js' | '.d.ts'): string {
  return `./${CJS_DIR}/${entry.source}${extension}`;
}

export function esmFile(entry: Entry, extension: '.js' | '.d.ts'): string {
  return `./${ESM_DIR}/${wrapperName(entry)}${extension}`;
}

/** The specifier an ESM wrapper uses to reach its CommonJS module. */
export function cjsFromWrapper(entry: Entry): string {
  const from = posix.dirname(esmFile(entry, '.js'));
  const relative = posix.relative(from, cjsFile(entry, '.js'));
  return relative.startsWith('.') ? relative : `./${relative}`;
}
