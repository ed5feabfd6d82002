/**
 * A test that times out never reaches its `finally`: an embedded Postgres it started keeps running
 * after its process ends, holding a port and memory for the rest of the run and beyond. The suite's
 * teardown reaps every server started under the run's own directory, by the pid Postgres wrote.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { reapEmbeddedPostgres } from '../../dev/postgres.js';

const parents: string[] = [];
afterEach(async () => {
  for (const parent of parents.splice(0)) await rm(parent, { recursive: true, force: true });
});

/**
 * A process standing in for a postmaster (its command line names postgres, as the reaper checks), with the
 * data directory and pid file a real one keeps; `command` another process that took a dead server's pid.
 */
async function serverLeftIn(parent: string, name: string, command = 'postgres') {
  const server = spawn('sh', ['-c', 'sleep 60', command], { stdio: 'ignore' });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => server.once('exit', (_, signal) => resolve(signal)));
  await mkdir(join(parent, name, 'data'), { recursive: true });
  await writeFile(join(parent, name, 'data', 'postmaster.pid'), `${server.pid}\n/some/data\n1700000000\n5432\n`);
  return { pid: server.pid!, exited };
}

describe('embedded Postgres servers a run leaves behind', () => {
  it('are killed by the pid in their postmaster.pid, and their directories deleted', async () => {
    const parent = await mkdtemp(join(tmpdir(), 'reap-test-'));
    parents.push(parent);
    const left = await serverLeftIn(parent, 'temporal-idempotency-pg-abc');
    await mkdir(join(parent, 'temporal-idempotency-pg-stopped', 'data'), { recursive: true }); // stopped cleanly: no pid file

    expect(await reapEmbeddedPostgres(parent)).toEqual([left.pid]);
    expect(await left.exited).toBe('SIGKILL');
    expect(existsSync(join(parent, 'temporal-idempotency-pg-abc'))).toBe(false);
    expect(existsSync(join(parent, 'temporal-idempotency-pg-stopped'))).toBe(false);
  });

  it('leaves alone what is not an embedded server of this run', async () => {
    const parent = await mkdtemp(join(tmpdir(), 'reap-test-'));
    parents.push(parent);
    const other = await serverLeftIn(parent, 'someone-elses-pg');
    try {
      expect(await reapEmbeddedPostgres(parent)).toEqual([]);
      expect(existsSync(join(parent, 'someone-elses-pg'))).toBe(true);
    } finally {
      process.kill(other.pid, 'SIGKILL');
      await other.exited;
    }
  });

  it('never kills a process that is not a postgres, though its pid is in a pid file (a server that died, its pid reused)', async () => {
    const parent = await mkdtemp(join(tmpdir(), 'reap-test-'));
    parents.push(parent);
    const bystander = await serverLeftIn(parent, 'temporal-idempotency-pg-died', 'bystander');
    try {
      expect(await reapEmbeddedPostgres(parent)).toEqual([]);
      expect(existsSync(join(parent, 'temporal-idempotency-pg-died'))).toBe(false);
      expect(() => process.kill(bystander.pid, 0)).not.toThrow();
    } finally {
      process.kill(bystander.pid, 'SIGKILL');
      await bystander.exited;
    }
  });

  it('is a no-op on a directory that is gone', async () => {
    expect(await reapEmbeddedPostgres(join(tmpdir(), 'no-such-run-directory-for-reaping'))).toEqual([]);
  });
});
