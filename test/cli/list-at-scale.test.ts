/**
 * `list` and `ledger` over more rows than fit in one page: every row once, in
 * order, and the CLI's memory does not grow with the number of rows printed.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, inject, it } from 'vitest';
import { useTestSchema } from '../support/schema.js';
import { cliArgv, runCli } from '../support/cli.js';

const schema = useTestSchema(import.meta.filename);
const cli = (args: string[], nodeFlags: string[] = []) => runCli([...args, '--schema', schema.name], {}, { nodeFlags });

/** `count` completed claims of `activityType`, each with a result of `resultBytes`, claimed a second apart. */
async function seedCompleted(activityType: string, count: number, resultBytes: number): Promise<void> {
  await schema.pool.query(
    `
INSERT INTO "${schema.name}".claims (key, state, token, fingerprint, namespace, activity_type, workflow_id, run_id,
  activity_id, attempt, claimed_by, claimed_at, finished_at, result_payload, audited)
SELECT md5($3 || i), 'completed', gen_random_uuid(), 'fp', 'default', $3, 'wf-' || i, 'run-1', '1', 1, 'bulk/1',
  now() - i * interval '1 second', now(),
  jsonb_build_object('metadata', jsonb_build_object('encoding', 'anNvbi9wbGFpbg=='), 'data', repeat('A', $2)), true
FROM generate_series(1, $1) AS i`,
    [count, resultBytes, activityType],
  );
}

describe('list at scale', () => {
  it('prints every claim over several pages once, oldest first, as one JSON array and as one table', async () => {
    await seedCompleted('paged', 2_500, 10);
    const json = await cli(['list', '--activity', 'paged', '--limit', '5000', '--json']);
    expect(json.code).toBe(0);
    const rows = JSON.parse(json.stdout) as Array<{ key: string; claimed_at: string; result?: unknown }>;
    expect(rows).toHaveLength(2_500);
    expect(new Set(rows.map((row) => row.key)).size).toBe(2_500);
    const times = rows.map((row) => Date.parse(row.claimed_at));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(Object.keys(rows[0]!)).toEqual(['key', 'state', 'activity_type', 'workflow_id', 'attempt', 'claimed_by', 'claimed_at', 'owner_alive']);

    const table = await cli(['list', '--activity', 'paged', '--limit', '2100']);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(2_101);
    expect(lines.filter((line) => line.startsWith('key '))).toHaveLength(1);
    expect(lines.slice(1).map((line) => line.split(/\s+/)[0])).toEqual(rows.slice(0, 2_100).map((row) => row.key));
  });

  it('stops quietly, exit 0, when its reader closes the pipe early (| head)', async () => {
    await seedCompleted('piped', 20_000, 10);
    const list = `"${process.execPath}" ${cliArgv().join(' ')} list --activity piped --limit 20000 --schema ${schema.name}`;
    const child = spawn('bash', ['-c', `${list} | head -c 100 > /dev/null; exit \${PIPESTATUS[0]}`], {
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      env: { ...process.env, DATABASE_URL: inject('databaseUrl') },
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });

  it('prints 100,000 claims with 2 KB results in a 48 MB heap: memory does not grow with the rows printed', async () => {
    await seedCompleted('bulk', 100_000, 2_048);
    const run = await cli(['list', '--activity', 'bulk', '--limit', '100000', '--json'], ['--max-old-space-size=48']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout.match(/"key":/g)).toHaveLength(100_000);
  });

  it('ledger prints every call over several pages once, newest first', async () => {
    await schema.pool.query(
      `
INSERT INTO "${schema.name}".ledger (call_id, event, key, activity_type, workflow_id, run_id, activity_id, attempt, worker, at, outcome)
SELECT md5('call-' || i)::uuid, event, 'ledger-' || i, 'paged', 'wf-' || i, 'run-1', '1', 1, 'bulk/1',
  now() - i * interval '1 second' + CASE WHEN event = 'finished' THEN interval '10 ms' ELSE interval '0' END,
  CASE WHEN event = 'finished' THEN 'completed' END
FROM generate_series(1, 2500) AS i, unnest(ARRAY['started', 'finished']) AS event`,
    );
    const run = await cli(['ledger', '--limit', '5000', '--json']);
    expect(run.code).toBe(0);
    const calls = (JSON.parse(run.stdout) as Array<{ key: string; started_at: string }>).filter((call) => call.key.startsWith('ledger-'));
    expect(calls).toHaveLength(2_500);
    expect(new Set(calls.map((call) => call.key)).size).toBe(2_500);
    const times = calls.map((call) => Date.parse(call.started_at));
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });
});
