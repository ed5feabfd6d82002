/**
 * The TypeScript code blocks of a Markdown file, for compiling them as a
 * reader who copies them would. A block preceded by
 * `<!-- not-compiled: reason -->` is left out, and its reason kept for the log.
 */
export interface CodeBlock {
  /** 1-based line of the opening fence. */
  readonly line: number;
  readonly code: string;
}

export interface SkippedBlock {
  readonly line: number;
  readonly reason: string;
}

const OPENING = /^( {0,3})(`{3,}|~{3,})\s*(\S*)/;
const TYPESCRIPT = new Set(['ts', 'typescript']);
const NOT_COMPILED = /^\s*<!--\s*not-compiled:\s*(.*?)\s*-->\s*$/;

export function typescriptBlocks(markdown: string): { compiled: CodeBlock[]; skipped: SkippedBlock[] } {
  const lines = markdown.split(/\r?\n/);
  const compiled: CodeBlock[] = [];
  const skipped: SkippedBlock[] = [];
  for (let index = 0; index < lines.length; index++) {
    const opening = OPENING.exec(lines[index] ?? '');
    if (!opening) continue;
    const [, indent = '', fence = '', language = ''] = opening;
    const end = closingLine(lines, index + 1, fence);
    if (TYPESCRIPT.has(language.toLowerCase())) {
      const line = index + 1;
      const reason = notCompiledReason(lines, index);
      const body = lines.slice(index + 1, end).map((text) => (text.startsWith(indent) ? text.slice(indent.length) : text.trimStart()));
      if (reason === undefined) compiled.push({ line, code: `${body.join('\n')}\n` });
      else skipped.push({ line, reason });
    }
    index = end;
  }
  return { compiled, skipped };
}

/** A fence closes on a line of the same character, at least as long, and nothing else. */
function closingLine(lines: readonly string[], from: number, fence: string): number {
  for (let index = from; index < lines.length; index++) {
    const text = (lines[index] ?? '').trim();
    if (text.length >= fence.length && text === (fence[0] ?? '').repeat(text.length)) return index;
  }
  throw new Error(`The code fence opened on line ${from} is never closed.`);
}

function notCompiledReason(lines: readonly string[], fenceIndex: number): string | undefined {
  let index = fenceIndex - 1;
  while (index >= 0 && (lines[index] ?? '').trim() === '') index--;
  const marker = NOT_COMPILED.exec(lines[index] ?? '');
  if (!marker) return undefined;
  if (!marker[1]) throw new Error(`The not-compiled marker above line ${fenceIndex + 1} gives no reason.`);
  return marker[1];
}
