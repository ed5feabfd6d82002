/**
 * The result an operator gives `resolve`: `--result JSON` on the command line,
 * or `--result-file PATH` (`-` for standard input) for one too large for a
 * command line (Linux refuses a single argument over 128 KiB).
 */
import { readFile } from 'node:fs/promises';
import { CliError, EXIT } from './errors.js';
import { errorMessage } from '../error-text.js';

export interface ResultFlags {
  readonly result?: string | undefined;
  readonly 'result-file'?: string | undefined;
}

/** The parsed JSON value, or a usage error naming where it came from; read before anything is changed. */
export async function readResult(flags: ResultFlags): Promise<unknown> {
  const { text, source } = await resultText(flags);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new CliError(`${source} is not valid JSON (${errorMessage(error)}); nothing was changed.`, EXIT.usage);
  }
}

async function resultText(flags: ResultFlags): Promise<{ text: string; source: string }> {
  const inline = flags.result;
  const path = flags['result-file'];
  if (inline !== undefined && path !== undefined) {
    throw new CliError('resolve takes --result or --result-file, not both; nothing was changed.', EXIT.usage);
  }
  if (inline !== undefined) return { text: inline, source: '--result' };
  if (path === undefined) {
    throw new CliError(
      'resolve needs what the call returned, as JSON: --result \'{"id":"ch_1"}\', or --result-file PATH ' +
        '(--result-file - reads standard input).',
      EXIT.usage,
    );
  }
  if (path === '-') return { text: await readStandardInput(), source: '--result-file - (standard input)' };
  try {
    return { text: await readFile(path, 'utf8'), source: `--result-file ${path}` };
  } catch (error) {
    throw new CliError(`--result-file ${path} could not be read (${errorMessage(error)}); nothing was changed.`, EXIT.usage);
  }
}

async function readStandardInput(): Promise<string> {
  if (process.stdin.isTTY) console.error('Reading the result as JSON from standard input; end it with Ctrl-D.');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}
