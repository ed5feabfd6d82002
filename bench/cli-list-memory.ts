/**
 * `tsx bench/cli-list-memory.ts [--claims 100000] [--result-bytes 2048]`: the
 * CLI's peak memory for `list --limit N --json` (and the table) over N claims
 * with results of the given size, as `/usr/bin/time -v` reports it. Starts
 * Postgres itself (or uses DATABASE_URL) in a schema of its own, dropped after.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startPostgres } from '../dev/postgres.js';
import { migrate } from '../src/index.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({ options: { claims: { type: 'string', default: '100000' }, 'result-bytes': { type: 'string', default: '2048' } } });
const claims = Number(values.claims);
const resultBytes = Number(values['result-bytes']);

const postgres = await startPostgres();
const pool = new pg.Pool({ connectionString: postgres.connectionString, max: 2 });
pool.on('error', () => undefined); // idle clients when the server stops
const schema = `bench_cli_list_${randomBytes(3).toString('hex')}`;
try {
  await migrate(pool, { schema });
  // Completed claims with a result of `resultBytes` of JSON each: what `list` must not load.
  await pool.query(
    `
INSERT INTO "${schema}".claims (key, state, token, fingerprint, namespace, activity_type, workflow_id, run_id, activity_id,
  attempt, claimed_by, claimed_at, finished_at, result_payload, worker_schema)
SELECT md5(i::text), 'completed', gen_random_uuid(), md5(i::text), 'default', 'chargeCard', 'wf-' || i, 'run-1', '1',
  1, 'bench/1', now() - i * interval '1 second', now(),
  jsonb_build_object('metadata', jsonb_build_object('encoding', 'anNvbi9wbGFpbg=='), 'data', repeat('A', $2))
FROM generate_series(1, $1) AS i`,
    [claims, resultBytes],
  );
  const limits = [1, Math.round(claims / 10), claims];
  for (const args of [...limits.map((limit) => ['list', '--limit', String(limit), '--json']), ['list', '--limit', String(claims)]]) {
    const { peakKb, seconds, lines } = await measure(args, postgres.connectionString);
    console.log(`${args.join(' ')}: peak RSS ${(peakKb / 1024).toFixed(0)} MB, ${seconds} s wall, ${lines} lines out`);
  }
} finally {
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
  await postgres.stop();
}

function measure(args: string[], databaseUrl: string): Promise<{ peakKb: number; seconds: string; lines: number }> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      '/usr/bin/time',
      ['-v', process.execPath, '--import', 'tsx', 'src/cli/bin.ts', ...args, '--schema', schema],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: databaseUrl }, maxBuffer: 2 ** 31 - 1 },
      (error, stdout, stderr) => {
        if (error) return reject(new Error(`${args.join(' ')} failed: ${stderr.slice(0, 2000)}`));
        const peak = /Maximum resident set size \(kbytes\): (\d+)/.exec(stderr);
        const wall = /Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)/.exec(stderr);
        resolve({ peakKb: Number(peak?.[1]), seconds: wall?.[1] ?? '?', lines: stdout.split('\n').length - 1 });
      },
    );
    child.stdin?.end();
  });
}
