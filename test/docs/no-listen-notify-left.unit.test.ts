/**
 * Waiters poll the claim: the store keeps no LISTEN connection, sends no NOTIFY and has no `watch`.
 * What users read (the docs, the shipped sources' comments, the unreleased CHANGELOG entries other
 * than the one saying they went) must not describe them as still there.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

function filesUnder(dir: string, ext: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path, ext) : path.endsWith(ext) ? [path] : [];
  });
}

/** What a reader could take as the store still keeping a connection, a channel or a watch of its own. */
const STALE = [/\bLISTEN\b/, /\bNOTIFY\b/, /pg_notify/, /store's own connection/, /\bwoken\b/, /\bClaimWatch\b/, /outcomeChannel/, /onAdvance/];

describe('no LISTEN/NOTIFY left in what users read', () => {
  it('the docs, README, SECURITY.md and the sources\' comments', () => {
    const files = [join(ROOT, 'README.md'), join(ROOT, 'SECURITY.md'), ...filesUnder(join(ROOT, 'docs'), '.md'), ...filesUnder(join(ROOT, 'src'), '.ts')];
    const found = files.flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, index) => (STALE.some((pattern) => pattern.test(line)) ? [`${relative(ROOT, file)}:${index + 1}: ${line.trim()}`] : [])),
    );
    expect(found).toEqual([]);
  });

  it('the unreleased CHANGELOG, but for the entry that says they went', () => {
    const unreleased = readFileSync(join(ROOT, 'CHANGELOG.md'), 'utf8').split(/^## /m)[1]!;
    const entries = unreleased.split(/^- /m).filter((entry) => !entry.includes('instead of waiting on\n  `LISTEN/NOTIFY`'));
    expect(entries.filter((entry) => STALE.some((pattern) => pattern.test(entry)))).toEqual([]);
  });
});
