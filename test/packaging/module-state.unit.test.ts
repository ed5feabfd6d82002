/**
 * What a worker or a store keeps lives on that worker or store: two workers (or two stores) in one
 * process never share a Set or Map by accident (found in review: a near-miss warning said by one worker
 * was never said by the next, and every worker on a store shared one lease keeper). Module-level
 * mutable state in src/worker and src/store is limited to the entries below, each with its reason;
 * a new one fails here until it is moved onto its owner or listed with why it cannot be.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** `file: name`, and why it is the process's rather than an instance's. */
const ALLOWED: Record<string, string> = {
  // Node's diagnostics channels are the process's: so is what is heard on them, keyed by request and execution.
  'src/worker/redirected-writes.ts: requestAttempts': 'diagnostics channels are process-wide',
  'src/worker/redirected-writes.ts: redirectedWrites': 'diagnostics channels are process-wide',
  'src/worker/redirected-writes.ts: redirectedByKey': 'diagnostics channels are process-wide (bounded, by idempotency key)',
  'src/worker/redirected-writes.ts: requestKeys': 'diagnostics channels are process-wide',
  'src/worker/redirected-writes.ts: channels': 'the channel objects, held so Node does not collect the subscriptions',
  // Temporal's Runtime, whose logger this is, is one per process.
  'src/store/store-logger.ts: processDefault': "the Runtime logger stores without their own report to",
};

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
  it('is only what is listed, each for a reason', () => {
    const found = ['src/worker', 'src/store'].flatMap(sourceFiles).flatMap(moduleState).sort();
    expect(found).toEqual(Object.keys(ALLOWED).sort());
  });
});
