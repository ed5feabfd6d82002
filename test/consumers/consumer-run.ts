/**
 * One fixture, start to finish, each step timed: install, one SDK, types,
 * compiled output, entries at run time, workflows through the interceptor
 * (composed by hand, and through IdempotencyPlugin), and (in the ES module
 * fixture) the README's code.
 */
import { randomBytes } from 'node:crypto';
import { UNLISTED_OPTIONAL_PEERS, assertNotInstalled } from './checks/optional-peers.js';
import { assertOneSdkCopy } from './checks/single-copy.js';
import { compileReadmeBlocks } from './checks/readme.js';
import { checkOwnDeclarations, compile, tsconfigsOf, typecheck, writeEntryTypes } from './checks/types.js';
import { run, runNode } from './exec.js';
import { install } from './fixture.js';
import type { Fixture } from './fixture.js';
import type { Services } from './services.js';
import { step } from './steps.js';
import type { Versions } from './versions.js';

export async function runFixture(fixture: Fixture, tarball: string, versions: Versions, services: Services): Promise<void> {
  const at = (name: string, work: () => Promise<unknown>) => step(fixture.name, name, work);
  const inFixture = { cwd: fixture.dir };
  await at(`npm install (SDK ${versions.sdk}, pg ${versions.pg})`, () => install(fixture, tarball, versions));
  await at('one copy of each SDK package', async () => console.log(`  ${await assertOneSdkCopy(fixture.dir)}`));
  await at(`without ${UNLISTED_OPTIONAL_PEERS.join(', ')}`, () => assertNotInstalled(fixture.dir, UNLISTED_OPTIONAL_PEERS));
  await at('entry types', async () => console.log(`  ${(await writeEntryTypes(fixture)).join(', ')}`));
  for (const { file, emits } of tsconfigsOf(fixture)) {
    await at(`typecheck (${file})`, () => typecheck(fixture, file));
    await at(`library declarations (${file}, skipLibCheck off)`, () => checkOwnDeclarations(fixture, file));
    if (emits) await at(`compile (${file})`, () => compile(fixture, file));
  }
  await at('every entry through require and import', async () => print(await runNode(['lib/entries.js'], inFixture)));
  await at('a unit test with temporal-idempotency/testing, without pg', async () => print(await runNode(['lib/unit-test.js'], inFixture)));
  if (fixture.kind === 'commonjs') {
    await at('bundle the module:commonjs output', async () => print(await runNode(['lib/bundle.js', 'lib-commonjs/workflows.js'], inFixture)));
  }
  // Each on a schema of its own, dropped when it passes.
  const onServices = () => {
    const schema = `consumer_${fixture.name.replace(/-/g, '_')}_${randomBytes(3).toString('hex')}`;
    const env = { ...process.env, TEMPORAL_ADDRESS: services.temporalAddress, DATABASE_URL: services.databaseUrl, SMOKE_SCHEMA: schema };
    return { ...inFixture, env, timeoutMs: 180_000 };
  };
  await at('workflows through the interceptor composed by hand, and the CLI', async () => print(await runNode(['lib/smoke.js'], onServices())));
  await at("a worker registered with IdempotencyPlugin, as the README's first block", async () =>
    print(await runNode(['lib/plugin-worker.js'], onServices())),
  );
  if (fixture.kind === 'esm') {
    // Last, so every step before ran without OpenTelemetry: the README's tracing section registers its plugin.
    await at(`npm install @temporalio/interceptors-opentelemetry@${versions.sdk} (for the README)`, () =>
      run('npm', ['install', '--no-save', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', `@temporalio/interceptors-opentelemetry@${versions.sdk}`], inFixture),
    );
    await at('README and docs blocks compile', async () => {
      const report = await compileReadmeBlocks(fixture);
      for (const block of report.compiled) console.log(`  ${block.page} line ${block.line}: compiles ${block.as.join(' and ')}`);
      for (const block of report.skipped) console.log(`  ${block.page} line ${block.line}: not compiled (${block.reason})`);
    });
  }
}

function print(output: { stdout: string }): void {
  for (const line of output.stdout.trimEnd().split('\n')) if (line) console.log(`  ${line}`);
}
