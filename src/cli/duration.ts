import { createRequire } from 'node:module';
import { CliError, EXIT } from './errors.js';

// `ms`'s own typings do not resolve under NodeNext; its one function is all we use.
const ms = createRequire(import.meta.url)('ms') as (text: string) => number | undefined;

/** `7d`, `24h`, `90m`, `30s` → milliseconds, or a usage error naming the flag. */
export function parseDuration(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const millis = ms(text);
  if (typeof millis !== 'number' || !Number.isFinite(millis) || millis <= 0) {
    throw new CliError(`${flag} ${JSON.stringify(text)} is not a duration; use e.g. 30m, 24h or 7d.`, EXIT.usage);
  }
  return millis;
}
