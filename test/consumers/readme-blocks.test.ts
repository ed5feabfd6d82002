import { describe, expect, it } from 'vitest';
import { typescriptBlocks } from './readme-blocks.js';

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
