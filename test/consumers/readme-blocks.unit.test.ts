import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { typescriptBlocks } from './readme-blocks.js';

const README = new URL('../../README.md', import.meta.url);

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

describe("the README's own blocks", () => {
  // The consumer run compiles what this extractor hands it; a block it skips is never checked.
  it('leaves none out of the compile check: each one stands alone, with its own imports', async () => {
    const { compiled, skipped } = typescriptBlocks(await readFile(README, 'utf8'));
    expect(skipped).toEqual([]);
    expect(compiled.length).toBeGreaterThan(10);
  });

  it('shows the hand-composed registration as a whole worker: it imports idempotencyInterceptors and makes its own pool', async () => {
    const { compiled } = typescriptBlocks(await readFile(README, 'utf8'));
    const byHand = compiled.filter(({ code }) => code.includes('...idempotencyInterceptors(') && code.includes('workflowModules:'));
    expect(byHand).toHaveLength(1);
    const [{ code } = { code: '' }] = byHand;
    expect(code).toMatch(/^import \{[^}]*\bidempotencyInterceptors\b[^}]*\} from 'temporal-idempotency';$/m);
    expect(code).toMatch(/^import \* as activities from '\.\/activities';$/m);
    expect(code).toMatch(/const pool = new pg\.Pool\(/);
  });
});
