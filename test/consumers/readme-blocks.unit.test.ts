import { readFile, readdir } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { typescriptBlocks } from './readme-blocks.js';

const ROOT = new URL('../../', import.meta.url);

/** The README and every page under docs/: the documentation the package ships. */
async function pages(): Promise<Array<{ page: string; markdown: string }>> {
  const docs = (await readdir(new URL('docs/', ROOT))).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`);
  return Promise.all(['README.md', ...docs].map(async (page) => ({ page, markdown: await readFile(new URL(page, ROOT), 'utf8') })));
}

const markdown = [
  '# Title',
  '```ts',
  "import { a } from 'x';",
  '```',
  '```sh',
  'npm test',
  '```',
  '<!-- not-compiled: a fragment of the options object -->',
  '',
  '```ts',
  '{ store }',
  '```',
  '1. A step:',
  '   ```typescript',
  '   const b = 1;',
  '     const c = 2;',
  '   ```',
  '````md',
  '```ts',
  'inside another fence',
  '```',
  '````',
].join('\n');

describe('typescriptBlocks', () => {
  it('takes ts and typescript blocks, with their fence line, and leaves other languages alone', () => {
    const { compiled } = typescriptBlocks(markdown);
    expect(compiled).toEqual([
      { line: 2, code: "import { a } from 'x';\n" },
      { line: 14, code: 'const b = 1;\n  const c = 2;\n' },
    ]);
  });

  it('skips a block marked not-compiled, keeping its reason, even across a blank line', () => {
    expect(typescriptBlocks(markdown).skipped).toEqual([{ line: 10, reason: 'a fragment of the options object' }]);
  });

  it('does not read a ts fence nested inside a longer fence as a block', () => {
    const { compiled } = typescriptBlocks(markdown);
    expect(compiled.map((block) => block.code)).not.toContain('inside another fence\n');
  });

  it('refuses a marker without a reason and a fence that never closes', () => {
    expect(() => typescriptBlocks('<!-- not-compiled: -->\n```ts\nx\n```')).toThrow(/gives no reason/);
    expect(() => typescriptBlocks('```ts\nx')).toThrow(/never closed/);
  });
});

describe("the documentation's own blocks", () => {
  // The consumer run compiles what this extractor hands it; a block it skips is never checked.
  it('leaves none out of the compile check: each one stands alone, with its own imports', async () => {
    const found = (await pages()).map(({ page, markdown }) => ({ page, ...typescriptBlocks(markdown) }));
    expect(found.filter(({ skipped }) => skipped.length > 0).map(({ page }) => page)).toEqual([]);
    expect(found.find(({ page }) => page === 'README.md')?.compiled.length).toBeGreaterThanOrEqual(3);
    expect(found.reduce((sum, { compiled }) => sum + compiled.length, 0)).toBeGreaterThan(10);
  });

  it('shows the hand-composed registration as a whole worker: it imports idempotencyInterceptors and makes its own pool', async () => {
    const compiled = (await pages()).flatMap(({ markdown }) => typescriptBlocks(markdown).compiled);
    const byHand = compiled.filter(({ code }) => code.includes('...idempotencyInterceptors(') && code.includes('workflowModules:'));
    expect(byHand).toHaveLength(1);
    const [{ code } = { code: '' }] = byHand;
    expect(code).toMatch(/^import \{[^}]*\bidempotencyInterceptors\b[^}]*\} from 'temporal-idempotency';$/m);
    expect(code).toMatch(/^import \* as activities from '\.\/activities';$/m);
    expect(code).toMatch(/const pool = new pg\.Pool\(/);
  });
});
