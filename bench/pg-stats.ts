/**
 * Server-side counters, to see where the time goes: committed transactions
 * and WAL flushes (fsyncs). A backend reports its counters at most once a
 * second, or when idle 10 s, so `flushPoolStats` makes every connection of a
 * pool report now: otherwise a warm-up's commits would land in the next run.
 */
import { readFile } from 'node:fs/promises';
import type pg from 'pg';

export interface ServerCounters {
  readonly commits: number;
  readonly walSyncs: number;
  readonly walBytes: number;
}

export async function readCounters(client: pg.Pool): Promise<ServerCounters> {
  // Our own backend's pending counters are flushed first, so the snapshot is not short by them.
  await client.query('SELECT pg_stat_force_next_flush()');
  const { rows: version } = await client.query<{ num: number }>(`SELECT current_setting('server_version_num')::int AS num`);
  // Postgres 18 moved the WAL's fsyncs from pg_stat_wal to pg_stat_io.
  const walSyncs = version[0]!.num >= 180_000 ? `(SELECT coalesce(sum(fsyncs), 0) FROM pg_stat_io WHERE object = 'wal')` : 'wal_sync';
  const { rows } = await client.query<{ commits: string; wal_sync: string; wal_bytes: string }>(`
SELECT
  (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()) AS commits,
  ${walSyncs} AS wal_sync,
  wal_bytes
FROM pg_stat_wal`);
  const row = rows[0]!;
  return { commits: Number(row.commits), walSyncs: Number(row.wal_sync), walBytes: Number(row.wal_bytes) };
}

/**
 * Makes each idle connection of `pool` report its pending counters (it does so before answering).
 * Returns how many statements that took, each one a commit in the counters.
 */
export async function flushPoolStats(pool: pg.Pool): Promise<number> {
  const clients = await Promise.all(Array.from({ length: pool.totalCount }, () => pool.connect()));
  try {
    await Promise.all(clients.map((client) => client.query('SELECT pg_stat_force_next_flush()')));
    return clients.length;
  } finally {
    for (const client of clients) client.release();
  }
}

/** Commits that reading the counters twice adds between the two snapshots: the first read's SELECT, the second's flush. */
export const COMMITS_PER_COUNTER_READ_PAIR = 2;

/** What happened between two snapshots, less `ownCommits` that measuring them cost. */
export function difference(after: ServerCounters, before: ServerCounters, ownCommits: number): ServerCounters {
  return {
    commits: after.commits - before.commits - ownCommits,
    walSyncs: after.walSyncs - before.walSyncs,
    walBytes: after.walBytes - before.walBytes,
  };
}

/** The settings that decide what a commit costs, printed with the results. */
export async function durabilitySettings(client: pg.Pool): Promise<Record<string, string>> {
  const { rows } = await client.query<{ name: string; setting: string }>(`
SELECT name, setting
FROM pg_settings
WHERE name IN ('server_version', 'fsync', 'synchronous_commit', 'wal_sync_method', 'commit_delay', 'max_connections')
ORDER BY name`);
  return Object.fromEntries(rows.map((row) => [row.name, row.setting]));
}

/** The postmaster's pid when Postgres runs on this machine (the parent of our backend), else null. */
export async function localPostmasterPid(client: pg.Pool): Promise<number | null> {
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  try {
    const stat = await readFile(`/proc/${rows[0]!.pid}/stat`, 'utf8');
    const postmaster = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    // The same pid on this machine may be an unrelated process when the server is elsewhere.
    const command = await readFile(`/proc/${postmaster}/cmdline`, 'utf8');
    return command.includes('postgres') ? postmaster : null;
  } catch {
    return null; // a server on another machine
  }
}
