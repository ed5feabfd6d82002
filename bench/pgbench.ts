/**
 * The same claim-and-complete cycle run by `pgbench`: what Postgres on this
 * machine does with a C client and no Node in the way. The key travels from
 * the INSERT ... RETURNING to the UPDATE through `\gset`; `-M prepared` parses
 * each statement once per connection, as the store's named statements do.
 */
import { execFile } from 'node:child_process';
import { access, constants, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { LEASE_MS, RESULT_JSON } from './claim-input.js';
import { cpuUsed, snapshotCpu } from './cpu-usage.js';
import type { CpuRoots } from './cpu-usage.js';

const run = promisify(execFile);
const PGBENCH = process.env['PGBENCH'] ?? '/usr/bin/pgbench';

/** Why pgbench cannot run here, or null when it can. */
export async function pgbenchUnavailable(): Promise<string | null> {
  try {
    await access(PGBENCH, constants.X_OK);
    await run(PGBENCH, ['--version']);
    return null;
  } catch (error) {
    return `${PGBENCH} is not installed or does not run (${error instanceof Error ? error.message : String(error)})`;
  }
}

export interface PgbenchResult {
  /** Claim-and-complete cycles per second. */
  readonly perSecond: number;
  /** Postgres's CPU (every server process) per cycle; null when the server is not on this machine. */
  readonly postgresCpuMsPerCycle: number | null;
}

/**
 * Transactions (one claim and one completion each) per second, and Postgres's CPU for each, after a warm-up run.
 * `scriptText`: another cycle to run instead of pgbench's own (bench/postgres-cost.ts).
 */
export async function pgbenchCycles(
  connectionString: string,
  schema: string,
  clients: number,
  seconds: number,
  warmupSeconds: number,
  cpuRoots: CpuRoots,
  scriptText: string = claimScript(schema),
): Promise<PgbenchResult> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-pgbench-'));
  try {
    const script = join(dir, 'claim.sql');
    await writeFile(script, scriptText);
    await pgbench(connectionString, script, clients, warmupSeconds);
    const before = await snapshotCpu(cpuRoots);
    const { perSecond, cycles } = await pgbench(connectionString, script, clients, seconds);
    const cpu = cpuUsed(await snapshotCpu(cpuRoots), before);
    // A run too short for its clients to connect on a busy machine finishes nothing: no figure, not a crash.
    return { perSecond, postgresCpuMsPerCycle: cpuRoots.postgres === null || cycles === 0 ? null : cpu.postgresMs / cycles };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function pgbench(connectionString: string, script: string, clients: number, seconds: number): Promise<{ perSecond: number; cycles: number }> {
  // One thread, like the one Node process it is compared with; -n: no VACUUM of pgbench's own tables.
  const args = ['-n', '-M', 'prepared', '-c', String(clients), '-j', '1', '-T', String(seconds), '-f', script, connectionString];
  const { stdout } = await run(PGBENCH, args, { maxBuffer: 1 << 20 });
  const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(stdout)?.[1];
  const cycles = /number of transactions actually processed: (\d+)/.exec(stdout)?.[1];
  if (cycles === '0') return { perSecond: Number.NaN, cycles: 0 };
  if (tps === undefined || cycles === undefined) throw new Error(`Could not read tps from pgbench:\n${stdout}`);
  return { perSecond: Number(tps), cycles: Number(cycles) };
}

/**
 * The store's two statements, one at a time (pgbench sends no batches); its variables stand in for the
 * parameters it can carry. The record commits without waiting for the WAL flush, as the store's does.
 */
export function claimScript(schema: string): string {
  const table = `"${schema}".claims`;
  const result = JSON.stringify(RESULT_JSON).replaceAll("'", "''");
  return `
INSERT INTO ${table}
  (key, state, token, fingerprint, namespace, activity_type, workflow_id, run_id, activity_id, attempt, claimed_by,
   lease_expires_at)
VALUES (md5(random()::text) || md5(random()::text), 'claimed', gen_random_uuid(), md5('fingerprint') || md5('bench'),
  'default', 'chargeCard', 'bench-workflow', '6b1f7c3e-2d4a-4c1e-9a51-0f3a9d2b8e71', :client_id, 1, 'pgbench',
  now() + ${LEASE_MS} * interval '1 millisecond')
ON CONFLICT (key) DO NOTHING
RETURNING *, true AS owner_alive \\gset
WITH settled AS (
UPDATE ${table}
SET state = 'completed', result_payload = '${result}', finished_at = now()
WHERE key = :key AND token = :token AND state = 'claimed'
RETURNING key, awaited)
SELECT awaited
FROM settled, (SELECT set_config('synchronous_commit', 'off', true)) AS relaxed;
`;
}
