/**
 * `npm run test:consumers`: the library as a new team gets it. Packs it, then
 * in fresh ES module and CommonJS projects, on the oldest and the newest end
 * of its peer ranges, runs every check in consumer-run.ts. Fixtures live
 * under the OS temp folder and are kept after the run for inspection.
 * `--only esm-oldest` (repeatable) runs just those fixtures.
 * Uses DATABASE_URL and TEMPORAL_ADDRESS when set, as the test suite does.
 */
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkoutTag } from '../support/checkout-tag.js';
import { parseArgs } from 'node:util';
import { runFixture } from './consumer-run.js';
import { run } from './exec.js';
import { createFixture } from './fixture.js';
import type { Kind } from './fixture.js';
import { checkContents, pack } from './pack.js';
import { startServices } from './services.js';
import { step } from './steps.js';
import { readManifest, versionsAt } from './versions.js';
import type { End, Versions } from './versions.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** One folder per checkout (named by its path's hash): two checkouts testing at once must not share fixtures. */
const WORK = join(tmpdir(), `temporal-idempotency-consumers-${checkoutTag(ROOT)}`);
const KINDS: readonly Kind[] = ['esm', 'commonjs'];
const ENDS: readonly End[] = ['oldest', 'newest'];

const { values } = parseArgs({ options: { only: { type: 'string', multiple: true }, 'summary-json': { type: 'string' } } });
const all = ENDS.flatMap((end) => KINDS.map((kind) => ({ kind, end, name: `${kind}-${end}` })));
const chosen = values.only ? all.filter((fixture) => values.only?.includes(fixture.name)) : all;
if (chosen.length === 0) throw new Error(`--only names no fixture; they are ${all.map((fixture) => fixture.name).join(', ')}`);

const started = Date.now();
await step('package', 'build', () => run('npm', ['run', 'build'], { cwd: ROOT }));
const manifest = await readManifest(ROOT);
const { tarball, files } = await step('package', 'npm pack', () => pack(ROOT, WORK));
await step('package', `tarball contents (${files.length} files)`, async () => checkContents(files, manifest));
const versions = new Map<End, Versions>();
for (const end of new Set(chosen.map((fixture) => fixture.end))) {
  const resolved = await step('versions', `${end} end of the peer ranges`, () => versionsAt(end, manifest, ROOT));
  console.log(`  SDK ${resolved.sdk}, pg ${resolved.pg}, @types/pg ${resolved.typesPg}, TypeScript ${resolved.typescript}`);
  versions.set(end, resolved);
}
const services = await step('services', 'Postgres and Temporal dev server', () => startServices((line) => console.log(`  ${line}`)));
const failed: string[] = [];
try {
  for (const { kind, end, name } of chosen) {
    try {
      const fixture = await createFixture(WORK, kind, end);
      await runFixture(fixture, tarball, versions.get(end)!, services);
    } catch (error) {
      failed.push(name);
      console.error(`[${name}] ${error instanceof Error ? error.message : String(error)}`);
    }
  }
} finally {
  await services.stop();
}
const passed = chosen.length - failed.length;
console.log(`Consumer fixtures in ${WORK}, ${((Date.now() - started) / 1000).toFixed(0)} s in all${failed.length ? `; failed: ${failed.join(', ')}` : ''}`);
if (values['summary-json']) await writeFile(values['summary-json'], JSON.stringify({ passed, failed: failed.length }));
console.log(`consumers: ${passed} passed, ${failed.length} failed`);
process.exitCode = failed.length > 0 ? 1 : 0;
