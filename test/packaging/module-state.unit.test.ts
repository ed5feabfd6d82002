/**
 * What a worker or a store keeps lives on that worker or store: two workers (or two stores) in one
 * process never share a Set or Map by accident (found in review: a near-miss warning said by one worker
 * was never said by the next, and every worker on a store shared one lease keeper). src/worker and
 * src/store hold no module-level mutable state: a new one fails here until it is moved onto its owner.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const MUTABLE_CONSTRUCTORS = new Set(['Map', 'Set', 'WeakMap', 'WeakSet', 'Array']);

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
}

/** Top-level `let`/`var`, and top-level constants made empty with `new Map()` and the like, to be filled later. */
function moduleState(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  for (const statement of source.statements) {
    if (!ts.isVariableStatement(statement)) continue;
    const mutableBinding = (statement.declarationList.flags & (ts.NodeFlags.Let | ts.NodeFlags.Const)) !== ts.NodeFlags.Const;
    for (const declaration of statement.declarationList.declarations) {
      const init = declaration.initializer;
      const mutableValue =
        init !== undefined &&
        ts.isNewExpression(init) &&
        MUTABLE_CONSTRUCTORS.has(init.expression.getText(source)) &&
        // Filled as it is made (`new Set(['GET', …])`): a lookup table, a constant by use.
        (init.arguments?.length ?? 0) === 0;
      if (mutableBinding || mutableValue) found.push(`${relative(ROOT, join(ROOT, file))}: ${declaration.name.getText(source)}`);
    }
  }
  return found;
}

describe('module-level mutable state in src/worker and src/store', () => {
  it('is none', () => {
    const found = ['src/worker', 'src/store'].flatMap(sourceFiles).flatMap(moduleState);
    expect(found).toEqual([]);
  });
});
