/**
 * Every link in the documentation the package ships resolves inside the package: a reader of
 * node_modules/temporal-idempotency (or of npm's page for it) never meets a file that is not there,
 * nor a heading that is gone. Found by a new user: the installed README linked to docs, SECURITY.md,
 * CONTRIBUTING.md, docker-compose.yml and scripts that the package did not ship.
 */
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** What `npm pack` puts in the tarball, without building anything. */
function packedFiles(): string[] {
  const output = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return (JSON.parse(output) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((file) => file.path);
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading.trim().toLowerCase().replace(/[`*_]/g, '').replace(/[^\w\- ]/g, '').replace(/ /g, '-');
}

function anchorsIn(markdown: string): Set<string> {
  const anchors = new Set<string>();
  let fence = false;
  for (const line of markdown.split('\n')) {
    if (/^\s{0,3}(```|~~~)/.test(line)) fence = !fence;
    const heading = !fence && /^#{1,6} (.*)$/.exec(line);
    if (heading) anchors.add(anchorOf(heading[1]!));
  }
  return anchors;
}

/** The links of a page, outside code: `[text](target)`, with their line. */
function linksIn(markdown: string): Array<{ line: number; target: string }> {
  const links: Array<{ line: number; target: string }> = [];
  let fence = false;
  markdown.split('\n').forEach((text, index) => {
    if (/^\s{0,3}(```|~~~)/.test(text)) fence = !fence;
    if (fence) return;
    for (const match of text.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)) links.push({ line: index + 1, target: match[1]! });
  });
  return links;
}

describe('the documentation the package ships', () => {
  it('links only to files the package ships, and to headings they have', async () => {
    const shipped = new Set(packedFiles());
    const pages = [...shipped].filter((path) => path.endsWith('.md'));
    expect(pages).toEqual(expect.arrayContaining(['README.md', 'SECURITY.md', 'docs/runbook.md']));
    const dangling: string[] = [];
    for (const page of pages) {
      const markdown = await readFile(join(ROOT, page), 'utf8');
      for (const { line, target } of linksIn(markdown)) {
        if (/^[a-z]+:/.test(target)) continue; // https:, mailto:: outside the package
        const [path = '', anchor] = target.split('#');
        const file = path === '' ? page : normalize(join(dirname(page), path));
        if (!shipped.has(file)) {
          dangling.push(`${page}:${line} links to ${target}, which the package does not ship`);
          continue;
        }
        if (anchor && file.endsWith('.md') && !anchorsIn(await readFile(join(ROOT, file), 'utf8')).has(anchor)) {
          dangling.push(`${page}:${line} links to ${target}, a heading ${file} does not have`);
        }
      }
    }
    expect(dangling).toEqual([]);
  });

  it('has a package.json whose scripts a consumer is never asked to run or approve', async () => {
    const manifest = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
    // npm runs these in the consumer's install (npm 11 lists them as install scripts to approve).
    for (const hook of ['preinstall', 'install', 'postinstall', 'prepare']) expect(manifest.scripts?.[hook], hook).toBeUndefined();
  });
});
