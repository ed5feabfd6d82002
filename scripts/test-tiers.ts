/**
 * `npm test`: the unit tier first and, only when it passed, the integration
 * tier, each a `vitest run --project <tier>` with the arguments given.
 *
 * Two runs, not one ordered by `sequence.groupOrder`: vitest starts every
 * project's global setup (Postgres, Temporal, the workflow bundle) before any
 * test runs, and its `bail` would also stop the integration tier at its first
 * failure, where CI wants them all. A JSON report asked for
 * (`--outputFile.json=path`) covers both tiers, as one run's would.
 *
 * With file filters or `--project`, it is one plain `vitest run`: you picked
 * what to run.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseCLI } from 'vitest/node';

const TIERS = ['unit', 'integration'] as const;
const root = fileURLToPath(new URL('..', import.meta.url));
const vitestCli = fileURLToPath(new URL('../node_modules/vitest/vitest.mjs', import.meta.url));

const args = process.argv.slice(2);
const { filter, options } = parseCLI(['vitest', 'run', ...args]);
if (filter.length > 0 || options.project !== undefined) process.exit(vitestRun(args));

const reportPath = jsonReportPath(options.outputFile);
const reports: unknown[] = [];
let tiersRun = 0;
let status = 0;
for (const tier of TIERS) {
  tiersRun++;
  if (reportPath) rmSync(reportPath, { force: true });
  console.log(`\n== the ${tier} tier (vitest run --project ${tier})`);
  status = vitestRun(['--project', tier, ...args]);
  if (reportPath && existsSync(reportPath)) reports.push(JSON.parse(readFileSync(reportPath, 'utf8')));
  if (status !== 0) {
    if (tier === 'unit') console.log('\nThe unit tier failed: the integration tier was not started.');
    break;
  }
}
// A tier that ended without its report leaves none: a partial count would read as a pass.
if (reportPath && reports.length === tiersRun) {
  writeFileSync(reportPath, JSON.stringify(reports.reduce((a, b) => mergeReports(a, b))));
} else if (reportPath) {
  rmSync(reportPath, { force: true });
}
process.exit(status);

function vitestRun(vitestArgs: readonly string[]): number {
  const child = spawnSync(process.execPath, [vitestCli, 'run', ...vitestArgs], { cwd: root, stdio: 'inherit' });
  if (child.error) throw child.error;
  return child.status ?? 1;
}

/** Where the JSON reporter writes: `--outputFile.json=path`, or `--outputFile=path` for every reporter. */
function jsonReportPath(outputFile: unknown): string | undefined {
  if (typeof outputFile === 'string') return outputFile;
  const json = (outputFile as { json?: unknown } | undefined)?.json;
  return typeof json === 'string' ? json : undefined;
}

/**
 * Two JSON reports as one: counts added, test files listed together, `success` only when both
 * passed, flags (`snapshot.failure`) set when either set them, the earlier start time.
 */
function mergeReports(a: unknown, b: unknown, field = ''): unknown {
  if (typeof a === 'number' && typeof b === 'number') return field === 'startTime' ? Math.min(a, b) : a + b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return field === 'success' ? a && b : a || b;
  if (Array.isArray(a) && Array.isArray(b)) return [...a, ...b];
  if (isRecord(a) && isRecord(b)) {
    const merged: Record<string, unknown> = {};
    for (const name of new Set([...Object.keys(a), ...Object.keys(b)])) {
      merged[name] = name in a && name in b ? mergeReports(a[name], b[name], name) : (a[name] ?? b[name]);
    }
    return merged;
  }
  return b ?? a;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
