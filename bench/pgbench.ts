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
import { LATEST_MIGRATION } from '../src/store/migrations/index.js';

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

/** Transactions (one claim and one completion each) per second, after a warm-up run. */
export async function pgbenchCyclesPerSecond(
  connectionString: string,
  schema: string,
  clients: number,
  seconds: number,
  warmupSeconds: number,
): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-pgbench-'));
  try {
    const script = join(dir, 'claim.sql');
    await writeFile(script, claimScript(schema));
    await pgbench(connectionString, script, clients, warmupSeconds);
    return await pgbench(connectionString, script, clients, seconds);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function pgbench(connectionString: string, script: string, clients: number, seconds: number): Promise<number> {
  // One thread, like the one Node process it is compared with; -n: no VACUUM of pgbench's own tables.
  const args = ['-n', '-M', 'prepared', '-c', String(clients), '-j', '1', '-T', String(seconds), '-f', script, connectionString];
  const { stdout } = await run(PGBENCH, args, { maxBuffer: 1 << 20 });
  const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(stdout)?.[1];
  if (tps === undefined) throw new Error(`Could not read tps from pgbench:\n${stdout}`);
  return Number(tps);
}

/** The store's two statements; pgbench's variables stand in for the parameters it can carry. */
function claimScript(schema: string): string {
  const table = `"${schema}".claims`;
  const channel = `temporal_idempotency_${schema}`.slice(0, 63);
  const result = JSON.stringify(RESULT_JSON).replaceAll("'", "''");
  return `
INSERT INTO ${table}
  (key, state, token, fingerprint, namespace, activity_type, workflow_id, run_id, activity_id, attempt, claimed_by,
   lease_expires_at, worker_schema)
VALUES (md5(random()::text) || md5(random()::text), 'claimed', gen_random_uuid(), md5('fingerprint') || md5('bench'),
  'default', 'chargeCard', 'bench-workflow', '6b1f7c3e-2d4a-4c1e-9a51-0f3a9d2b8e71', :client_id, 1, 'pgbench',
  now() + ${LEASE_MS} * interval '1 millisecond', ${LATEST_MIGRATION})
ON CONFLICT (key) DO NOTHING
RETURNING *, true AS owner_alive \\gset
WITH settled AS (
UPDATE ${table}
SET state = 'completed', result_payload = '${result}', finished_at = now()
WHERE key = :key AND token = :token AND state = 'claimed'
RETURNING key, awaited)
SELECT CASE WHEN awaited THEN pg_notify('${channel}', key) END
FROM settled;
`;
}
