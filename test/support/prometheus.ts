/**
 * Prometheus, for the alert-rule tests: `promtool` and a real `prometheus` server from Debian's
 * `prometheus` package (.ci/run installs it). Where it is missing the tests skip, saying why, unless
 * REQUIRE_PROMETHEUS is set (CI sets it), when they fail.
 */
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { freePort } from '../../dev/free-port.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export const RULES_FILE = 'docs/alerts.rules.yml';

/** Whether `binary` runs here; with REQUIRE_PROMETHEUS set, its absence is an error. */
export function available(binary: 'promtool' | 'prometheus'): boolean {
  try {
    execFileSync(binary, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    if (process.env['REQUIRE_PROMETHEUS']) throw new Error(`${binary} is not installed: apt-get install prometheus (REQUIRE_PROMETHEUS is set).`);
    console.warn(`${binary} is not installed (Debian: apt-get install prometheus): the alert-rule test is skipped.`);
    return false;
  }
}

/** The metric names a rules text selects on (every `idempotency_…` name in its expressions). */
export function metricNamesIn(rulesText: string): string[] {
  const names = rulesText
    .split('\n')
    .filter((line) => /^\s*expr:/.test(line))
    .flatMap((line) => line.match(/\bidempotency_[a-z_]+\b/g) ?? []);
  return [...new Set(names)].sort();
}

export interface PrometheusServer {
  readonly url: string;
  /** Instant query; the result vector. */
  query(promql: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
  stop(): Promise<void>;
}

/** A Prometheus scraping `target` (host:port, path /metrics) every second, with the rules loaded. */
export async function startPrometheus(target: string, rulesFile: string): Promise<PrometheusServer> {
  const dir = mkdtempSync(join(tmpdir(), 'prometheus-'));
  const port = await freePort();
  writeFileSync(
    join(dir, 'prometheus.yml'),
    [
      'global: { scrape_interval: 1s, evaluation_interval: 1s }',
      `rule_files: [${JSON.stringify(rulesFile)}]`,
      'scrape_configs:',
      `  - job_name: workers`,
      `    static_configs: [{ targets: [${JSON.stringify(target)}] }]`,
    ].join('\n'),
  );
  const child: ChildProcess = spawn(
    'prometheus',
    [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
    { stdio: 'ignore' },
  );
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`prometheus exited with ${child.exitCode}`);
    if ((await fetch(`${url}/-/ready`).catch(() => undefined))?.ok) break;
    if (i > 300) throw new Error('prometheus was not ready within 30 s');
    await sleep(100);
  }
  return {
    url,
    async query(promql) {
      const response = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(promql)}`);
      const body = (await response.json()) as { status: string; error?: string; data?: { result: [] } };
      if (body.status !== 'success') throw new Error(`${promql}: ${body.error}`);
      return body.data!.result;
    },
    async stop() {
      child.kill('SIGTERM');
      if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
