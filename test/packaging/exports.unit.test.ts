/**
 * Found in review: the README's registration code, and the fixes the library's own messages recommend, from
 * the package as a user's project resolves it: this checkout linked into a fresh node_modules, so
 * `require` and `import` go through package.json's `exports` to dist/, not to src/. dist is what
 * `npm run build` (run by `npm ci`) writes; when it is missing, or stale in what it exports (built
 * before an export was added, renamed or removed), these tests fail and say to build.
 * They check names and resolution only; npm run test:consumers runs the packed tarball for real.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENTRIES } from '../../scripts/build/entries.js';
import { WORKFLOW_INTERCEPTORS_MISSING } from '../../src/workflow/resumable.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const STALE = 'dist is missing or stale: run `npm run build`';
const WORKFLOW_INTERCEPTORS = 'temporal-idempotency/workflow-interceptors';

/** What a user's project sees of each entry: its export names through each module system, or the error. */
interface Seen {
  readonly [specifier: string]: { readonly require: string[] | string; readonly import: string[] | string };
}

/**
 * Runs in a separate Node process in the user's project: vitest's own resolver would otherwise
 * answer the imports (and could reach src/ where Node reaches dist/).
 */
const PROBE = `
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const failure = (error) => \`\${error.code ?? error.name}: \${String(error.message).split('\\n')[0]}\`;
const seen = {};
for (const specifier of JSON.parse(process.argv[2])) {
  let required, imported;
  try { required = Object.keys(require(specifier)).sort(); } catch (error) { required = failure(error); }
  try { imported = Object.keys(await import(specifier)).sort(); } catch (error) { imported = failure(error); }
  seen[specifier] = { require: required, import: imported };
}
let resolved;
try { resolved = require.resolve(${JSON.stringify(WORKFLOW_INTERCEPTORS)}); } catch (error) { resolved = failure(error); }
process.stdout.write(JSON.stringify({ seen, resolved }));
`;

let project = '';
let seen: Seen = {};
let resolved = '';

beforeAll(async () => {
  project = await mkdtemp(join(tmpdir(), 'ti-user-'));
  await mkdir(join(project, 'node_modules'));
  await symlink(ROOT, join(project, 'node_modules', 'temporal-idempotency'));
  await writeFile(join(project, 'probe.mjs'), PROBE);
  const specifiers = ENTRIES.map(({ subpath }) => specifierOf(subpath));
  const { stdout } = await promisify(execFile)(process.execPath, ['probe.mjs', JSON.stringify(specifiers)], { cwd: project });
  ({ seen, resolved } = JSON.parse(stdout) as { seen: Seen; resolved: string });
}, 20_000);

afterAll(async () => {
  if (project) await rm(project, { recursive: true, force: true });
});

function specifierOf(subpath: string): string {
  return subpath === '.' ? 'temporal-idempotency' : `temporal-idempotency${subpath.slice(1)}`;
}

describe("the README's registration code, in a user's project", () => {
  it(`require.resolve('${WORKFLOW_INTERCEPTORS}') finds the built workflow interceptors`, () => {
    // The path the README's hand-composed block and the missing-interceptors message both give.
    expect(WORKFLOW_INTERCEPTORS_MISSING).toContain(`require.resolve('${WORKFLOW_INTERCEPTORS}')`);
    expect(relative(ROOT, resolved), STALE).toBe(join('dist', 'cjs', 'workflow', 'interceptors.js'));
    // What the SDK's bundler takes from a workflow interceptors module.
    expect(seen[WORKFLOW_INTERCEPTORS]?.require, STALE).toEqual(['interceptors']);
  });

  it.each(ENTRIES.map(({ subpath, source }) => [specifierOf(subpath), source] as const))(
    '%s exports, through require and import, what src/%s.ts exports',
    async (specifier, source) => {
      // By path: the entries are data (scripts/build/entries.ts), and vite cannot follow a template import.
      const names = Object.keys((await import(/* @vite-ignore */ join(ROOT, 'src', `${source}.ts`))) as object).sort();
      expect(names.length).toBeGreaterThan(0);
      expect(seen[specifier], STALE).toEqual({ require: names, import: names });
    },
  );
});

describe('the fixes the messages recommend exist', () => {
  it('IdempotencyPlugin, recommended by the missing-interceptors and registered-twice messages, is exported by the package', () => {
    expect(WORKFLOW_INTERCEPTORS_MISSING).toContain('IdempotencyPlugin');
    expect(seen['temporal-idempotency']?.require, STALE).toContain('IdempotencyPlugin');
    expect(seen['temporal-idempotency']?.import, STALE).toContain('IdempotencyPlugin');
  });
});
