/**
 * Every way the CLI can fail to use the database ends in exit 5 and a message
 * that names what failed (never the password), against real Postgres: a wrong
 * password, a missing database or role, TLS the server does not offer, a
 * server that accepts and never answers, a reset connection, a lock that
 * outlasts the statement timeout.
 */
import { afterEach, describe, expect, inject, it } from 'vitest';
import { EXIT } from '../../src/cli/errors.js';
import { useTestSchema } from '../support/schema.js';
import { runCli } from '../support/cli.js';
import { TcpProxy } from '../support/tcp-proxy.js';

const schema = useTestSchema(import.meta.filename);
const SECRET_PASSWORD = 'not-the-password-9f3b';

/** The test database's URL with `change` applied. */
function databaseUrl(change: (url: URL) => void): string {
  const url = new URL(inject('databaseUrl'));
  change(url);
  return url.toString();
}

const proxies: TcpProxy[] = [];
async function proxy(): Promise<{ proxy: TcpProxy; url: string }> {
  const real = new URL(inject('databaseUrl'));
  const started = new TcpProxy(real.hostname, Number(real.port));
  proxies.push(started);
  const port = await started.start();
  return { proxy: started, url: databaseUrl((url) => void (url.port = String(port))) };
}
afterEach(async () => {
  await Promise.all(proxies.splice(0).map((started) => started.stop()));
});

async function list(url: string, ...flags: string[]) {
  const started = Date.now();
  const run = await runCli(['list', '--schema', schema.name, ...flags], { DATABASE_URL: url });
  return { ...run, seconds: (Date.now() - started) / 1000 };
}

describe('a database the CLI cannot use: exit 5, what failed, never the password', () => {
  it.each([
    ['a wrong password', (url: URL) => void (url.password = SECRET_PASSWORD), /refused the login of user "postgres".*password authentication failed.*28P01.*PGPASSWORD/],
    ['a role that does not exist', (url: URL) => void ((url.username = 'no_such_role'), (url.password = SECRET_PASSWORD)), /refused the login of user "no_such_role"/],
    ['a database that does not exist', (url: URL) => void (url.pathname = '/no_such_database'), /has no database "no_such_database".*3D000.*PGDATABASE/],
    ['TLS the server does not offer', (url: URL) => void url.searchParams.set('sslmode', 'require'), /TLS .*failed.*does not support SSL.*sslmode/],
    ['nothing listening', (url: URL) => void (url.port = '1'), /Cannot reach the database at 127\.0\.0\.1:1 \(ECONNREFUSED\)/],
  ])('%s', async (_, change, message) => {
    const run = await list(databaseUrl(change));
    expect(run.code).toBe(EXIT.unavailable);
    expect(run.stderr).toMatch(message);
    expect(run.stderr).not.toContain(SECRET_PASSWORD);
  });

  it('a DATABASE_URL pg cannot read is a usage error that does not print it', async () => {
    const run = await list(`postgres://postgres:${SECRET_PASSWORD}@127.0.0.1:notaport/postgres`);
    expect(run.code).toBe(EXIT.usage);
    expect(run.stderr).toMatch(/DATABASE_URL is not a connection string pg can read/);
    expect(run.stderr).not.toContain(SECRET_PASSWORD);
  });

  it('a server that accepts the connection and never answers: bounded by the connect timeout', async () => {
    const { proxy: stalled, url } = await proxy();
    stalled.stall();
    const run = await list(url);
    expect(run.code).toBe(EXIT.unavailable);
    expect(run.stderr).toMatch(/accepted the connection but did not answer within 5 s/);
    expect(run.seconds).toBeLessThan(15);
  });

  it('a connection reset as it opens', async () => {
    const { proxy: resetting, url } = await proxy();
    resetting.reset();
    const run = await list(url);
    expect(run.code).toBe(EXIT.unavailable);
    // Which call saw the reset (connect, the first write or read) depends on timing.
    expect(run.stderr).toMatch(/closed the connection \(((connect|read|write) ECONNRESET|Connection terminated unexpectedly)/);
  });

  it('a connection closed as it opens', async () => {
    const { proxy: cut, url } = await proxy();
    cut.cut();
    const run = await list(url);
    expect(run.code).toBe(EXIT.unavailable);
    expect(run.stderr).toMatch(/closed the connection/);
  });

  it('a statement that waits past --statement-timeout (a lock held elsewhere) is cancelled', async () => {
    const holder = await schema.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`LOCK TABLE "${schema.name}".claims IN ACCESS EXCLUSIVE MODE`);
      const run = await list(inject('databaseUrl'), '--statement-timeout', '2s');
      expect(run.code).toBe(EXIT.unavailable);
      expect(run.stderr).toMatch(/did not finish a statement within 2s .*--statement-timeout/);
      expect(run.seconds).toBeLessThan(15);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
  });

  it('a bad --statement-timeout is a usage error', async () => {
    const run = await list(inject('databaseUrl'), '--statement-timeout', 'soon');
    expect(run.code).toBe(EXIT.usage);
    expect(run.stderr).toMatch(/--statement-timeout "soon" is not a duration/);
  });
});
