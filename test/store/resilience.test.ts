/**
 * The store survives what a real deployment does to its connections: a
 * Postgres restart or a cut connection (the process stays alive, with the
 * README's code as written), a half-open socket under a lease renewal, a
 * pool of one connection, and a server configured not to flush commits.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { PostgresClaimStore } from '../../src/index.js';
import type { StoreLogger } from '../../src/index.js';
import { LeaseKeeper } from '../../src/worker/lease-keeper.js';
import { claimRequest } from '../support/claims.js';
import { useTestSchema } from '../support/schema.js';
import { TcpProxy } from '../support/tcp-proxy.js';

const schema = useTestSchema(import.meta.filename);
const databaseUrl = new URL(inject('databaseUrl'));
const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function proxied(): Promise<{ proxy: TcpProxy; url: string }> {
  const proxy = new TcpProxy(databaseUrl.hostname, Number(databaseUrl.port));
  const url = new URL(databaseUrl);
  url.port = String(await proxy.start());
  cleanups.push(() => proxy.stop());
  return { proxy, url: url.toString() };
}

function poolFor(url: string, config: pg.PoolConfig = {}): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, connectionTimeoutMillis: 2_000, ...config });
  cleanups.push(() => pool.end().catch(() => undefined));
  return pool;
}

function recordingLogger(): StoreLogger & { lines: string[] } {
  const lines: string[] = [];
  return { lines, warn: (message) => void lines.push(message), error: (message) => void lines.push(message) };
}

describe('connections taken away', () => {
  it('a process using the README code stays alive when every connection is dropped, and claims again', async () => {
    const { proxy, url } = await proxied();
    const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./fixtures/readme-store-process.ts', import.meta.url))], {
      env: { ...process.env, DATABASE_URL: url, IDEMPOTENCY_SCHEMA: schema.name },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    cleanups.push(async () => void child.kill('SIGKILL'));
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    await until(() => output.includes('ready'), () => output);

    proxy.dropConnections(); // what a Postgres restart does to every open connection
    const exitedEarly = await Promise.race([exited.then(() => true), sleep(1_500).then(() => false)]);
    expect(exitedEarly, `the process died:\n${output}`).toBe(false);

    child.stdin.write('claim\n');
    await until(() => /claimed /.test(output), () => output);
    expect(output).toContain('claimed ok');
  });

  it('bounds a lease renewal stuck on a half-open connection, and renews on a fresh one afterwards', async () => {
    const { proxy, url } = await proxied();
    const store = new PostgresClaimStore({ pool: poolFor(url), schema: schema.name, logger: recordingLogger() });
    const { claim } = await store.begin(claimRequest(), 60_000);
    proxy.stall();
    const started = Date.now();
    await expect(store.renewLeases([claim], 60_000, 500)).rejects.toThrow(/timeout/i);
    expect(Date.now() - started).toBeLessThan(3_000);
    proxy.flow();
    expect(await store.renewLeases([claim], 60_000, 2_000)).toEqual([claim.token]);
  });
});

describe('leases', () => {
  it('keeps renewing a claim taken over under the same key after the old holder drops its own', async () => {
    const request = claimRequest();
    const { claim: orphan } = await schema.store.begin(request, 3_000);
    await schema.store.markUnknown(orphan, { summary: 'test: outcome unknown', detail: null });
    const taken = (await schema.store.takeOver({ ...orphan, state: 'unknown' }, { ...request, attempt: 2 }, 3_000))!;
    expect(taken.token).not.toBe(orphan.token);
    const keeper = new LeaseKeeper(schema.store, 3_000, () => undefined);
    keeper.hold(orphan);
    keeper.hold(taken);
    keeper.drop(orphan.token); // the old holder finishes; the new one still runs
    await sleep(4_000); // longer than the lease: only renewals keep it alive
    expect((await schema.store.get(request.key))?.ownerAlive).toBe(true);
    keeper.drop(taken.token);
  });

  it('tells the holder when a renewal finds its claim gone (an operator released it)', async () => {
    const request = claimRequest();
    const { claim } = await schema.store.begin(request, 1_500);
    let lost = 0;
    const keeper = new LeaseKeeper(schema.store, 1_500, () => undefined);
    keeper.hold(claim, () => lost++);
    await schema.pool.query(`DELETE FROM "${schema.name}".claims WHERE key = $1`, [request.key]);
    await sleep(1_200);
    keeper.drop(claim.token);
    expect(lost).toBe(1);
  });
});

describe('durability', () => {
  it('flushes each claim before answering even when the role turns synchronous_commit off', async () => {
    const pool = poolFor(inject('databaseUrl'), { max: 1, options: '-c synchronous_commit=off' });
    const logger = recordingLogger();
    const store = new PostgresClaimStore({ pool, schema: schema.name, logger, preparedStatements: false });
    await store.begin(claimRequest(), 60_000); // first use: the check runs
    expect(logger.lines.join('\n')).toMatch(/synchronous_commit is 'off'.*each claim sets it to 'on'/);
    // Postgres 18 moved the count of WAL syncs from pg_stat_wal to pg_stat_io.
    const { rows: version } = await pool.query<{ number: number }>("SELECT current_setting('server_version_num')::int AS number");
    const walSyncs =
      version[0]!.number >= 180_000 ? "SELECT sum(fsyncs) AS wal_sync FROM pg_stat_io WHERE object = 'wal'" : 'SELECT wal_sync FROM pg_stat_wal';
    const flushes = async () => {
      await pool.query('SELECT pg_stat_force_next_flush()');
      await sleep(50);
      const { rows } = await pool.query<{ wal_sync: string }>(walSyncs);
      return Number(rows[0]!.wal_sync);
    };
    const claims = 100;
    const before = await flushes();
    for (let i = 0; i < claims; i++) await store.begin(claimRequest(), 60_000);
    expect((await flushes()) - before).toBeGreaterThanOrEqual(claims);
  });
});

async function until(condition: () => boolean, describe: () => string, timeoutMs = 30_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(50)) if (condition()) return;
  throw new Error(`timed out; output so far:\n${describe()}`);
}

void randomUUID;
