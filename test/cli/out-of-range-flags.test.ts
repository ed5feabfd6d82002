/**
 * Bad input at the CLI: numbers its parsers accept but nothing downstream can hold. A horizon or a
 * limit past Postgres's range ended in exit 1 ("interval out of range", "value … is out of range
 * for type bigint") instead of a usage error naming the flag; a statement timeout past Node's
 * 32-bit timer became a 1 ms timeout (every statement "did not finish within 99999999999999d");
 * one under a millisecond was sent as `statement_timeout = 0`, which Postgres reads as no limit.
 */
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { useTestSchema } from '../support/schema.js';

const schema = useTestSchema(import.meta.filename);

describe('CLI flags out of range', () => {
  const cases: Array<[string, string[], RegExp]> = [
    ['a prune horizon past Postgres intervals', ['prune', '--older-than', '99999999999999999999d', '--dry-run'], /--older-than/],
    ['a list horizon past Postgres intervals', ['list', '--older-than', '99999999999999999999w'], /--older-than/],
    ['a limit past bigint', ['list', '--limit', '99999999999999999999'], /--limit/],
    ['a statement timeout past Node timers', ['--statement-timeout', '99999999999999d', 'list'], /--statement-timeout/],
    ['a statement timeout Postgres would read as none', ['--statement-timeout', '0.1ms', 'list'], /--statement-timeout/],
  ];
  for (const [what, args, named] of cases) {
    it(`${what} is a usage error naming the flag (exit 2)`, async () => {
      const run = await runCli([...args, '--schema', schema.name]);
      expect(run.stderr).toMatch(named);
      expect(run.code).toBe(2);
    });
  }
});
