/**
 * One Postgres server of the failover cluster, run from the machine's own
 * binaries (Debian's /usr/lib/postgresql/<major>/bin): a primary made with
 * initdb, or a standby cloned from it with pg_basebackup. Postgres refuses to
 * run as root, so as root every binary runs as the `postgres` user, and each
 * data directory belongs to that user.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { appendFile, chown, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** PG_BIN, or the newest Postgres under /usr/lib/postgresql that has pg_basebackup. */
export function postgresBinaries(): string {
  const given = process.env['PG_BIN'];
  if (given) return given;
  const root = '/usr/lib/postgresql';
  const majors = existsSync(root) ? readdirSync(root).filter((major) => existsSync(join(root, major, 'bin', 'pg_basebackup'))) : [];
  const newest = majors.sort((a, b) => Number(b) - Number(a))[0];
  if (!newest) {
    throw new Error(
      'No Postgres server binaries under /usr/lib/postgresql (initdb, pg_ctl, pg_basebackup): install Debian\'s ' +
        '`postgresql` package, or set PG_BIN to a directory that has them.',
    );
  }
  return join(root, newest, 'bin');
}

const asRoot = process.getuid?.() === 0;

/** Runs a Postgres binary, as the `postgres` user when this process is root. */
async function postgresCommand(binary: string, args: readonly string[]): Promise<string> {
  const path = join(postgresBinaries(), binary);
  const [command, commandArgs] = asRoot ? ['runuser', ['-u', 'postgres', '--', path, ...args]] : [path, [...args]];
  try {
    const { stdout } = await run(command, commandArgs, { timeout: 120_000 });
    return stdout;
  } catch (error) {
    const { stderr, stdout } = error as { stderr?: string; stdout?: string };
    throw new Error(`${binary} ${args.join(' ')} failed:\n${stderr ?? ''}${stdout ?? ''}`, { cause: error });
  }
}

/** A directory the server's user owns (mode 700, as Postgres demands of a data directory). */
export async function postgresOwnedDirectory(path: string): Promise<string> {
  await mkdir(path, { recursive: true, mode: 0o700 });
  if (asRoot) {
    const uid = Number((await run('id', ['-u', 'postgres'])).stdout.trim());
    const gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim());
    await chown(path, uid, gid);
  }
  return path;
}

export class PostgresNode {
  private constructor(
    readonly name: string,
    readonly dataDirectory: string,
    private listeningPort: number,
    private readonly logFile: string,
  ) {}

  get port(): number {
    return this.listeningPort;
  }

  get connectionString(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /** A new primary; `settings` go into its postgresql.conf. */
  static async initPrimary(name: string, root: string, port: number, settings: Readonly<Record<string, string>>): Promise<PostgresNode> {
    const node = await PostgresNode.prepare(name, root, port);
    await postgresCommand('initdb', ['-D', node.dataDirectory, '-U', 'postgres', '-A', 'trust', '--no-sync']);
    await appendFile(join(node.dataDirectory, 'postgresql.conf'), settingsText({ ...settings, port: String(port) }));
    return node;
  }

  /**
   * A standby cloned from `primary` with pg_basebackup, streaming from `upstreamPort` (the primary, or
   * a link in front of it) under `applicationName`, which synchronous_standby_names may name.
   */
  static async cloneStandby(
    name: string,
    root: string,
    port: number,
    primary: PostgresNode,
    options: { readonly upstreamPort: number; readonly applicationName: string; readonly settings: Readonly<Record<string, string>> },
  ): Promise<PostgresNode> {
    const node = await PostgresNode.prepare(name, root, port);
    await postgresCommand('pg_basebackup', ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', node.dataDirectory, '-X', 'stream', '-c', 'fast', '--no-sync']);
    const conninfo = `host=127.0.0.1 port=${options.upstreamPort} user=postgres application_name=${options.applicationName}`;
    await appendFile(
      join(node.dataDirectory, 'postgresql.auto.conf'),
      settingsText({ ...options.settings, port: String(port), primary_conninfo: conninfo }),
    );
    await writeFile(join(node.dataDirectory, 'standby.signal'), '');
    return node;
  }

  private static async prepare(name: string, root: string, port: number): Promise<PostgresNode> {
    const dataDirectory = await postgresOwnedDirectory(join(root, name));
    const logs = await postgresOwnedDirectory(join(root, 'logs'));
    return new PostgresNode(name, dataDirectory, port, join(logs, `${name}.log`));
  }

  async start(): Promise<void> {
    await postgresCommand('pg_ctl', ['-D', this.dataDirectory, '-l', this.logFile, '-w', '-t', '60', 'start']);
  }

  /** Ends a standby's recovery: from now on it accepts writes. */
  async promote(): Promise<void> {
    await postgresCommand('pg_ctl', ['-D', this.dataDirectory, '-w', '-t', '60', 'promote']);
  }

  /**
   * Starts a node that crashed as a server on its own (crash recovery, no standby to wait for) on
   * `port`, which no worker or proxy knows: to read what it had committed when it died.
   */
  async startAlone(port: number): Promise<void> {
    await appendFile(join(this.dataDirectory, 'postgresql.auto.conf'), settingsText({ port: String(port), synchronous_standby_names: '' }));
    this.listeningPort = port;
    await this.start();
  }

  /**
   * Returns how to kill this node's host: SIGKILL to the postmaster and every process it started,
   * with no chance to send or commit anything more. Each child of the postmaster calls setsid(),
   * so no process group holds them all, and a postmaster killed alone leaves its backends running
   * (committing, answering) until each notices. The returned step stops the postmaster first
   * (it forks nothing more), finds its children in /proc, and kills them all, synchronously.
   */
  async hostKiller(): Promise<() => void> {
    const postmaster = await this.postmasterPid();
    if (postmaster === null) throw new Error(`${this.name} is not running: there is no postmaster to kill.`);
    return () => {
      process.kill(postmaster, 'SIGSTOP');
      for (const pid of [...childrenOf(postmaster), postmaster]) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    };
  }

  /** Stops the server if it runs (fast shutdown), killing it if it does not stop. */
  async stop(): Promise<void> {
    if ((await this.postmasterPid()) === null) return;
    await postgresCommand('pg_ctl', ['-D', this.dataDirectory, '-m', 'immediate', '-w', '-t', '20', 'stop']).catch(async () => {
      const kill = await this.hostKiller().catch(() => undefined);
      kill?.();
    });
  }

  /** The last lines of the server's log, for an error message. */
  async recentLog(lines = 30): Promise<string> {
    const text = await readFile(this.logFile, 'utf8').catch(() => '');
    return text.split('\n').slice(-lines).join('\n');
  }

  /** The running postmaster's pid, or null when none runs (a stale pid file counts as none). */
  private async postmasterPid(): Promise<number | null> {
    const text = await readFile(join(this.dataDirectory, 'postmaster.pid'), 'utf8').catch(() => null);
    const pid = text ? Number(text.split('\n')[0]) : NaN;
    if (!Number.isInteger(pid) || pid <= 0) return null;
    try {
      process.kill(pid, 0);
      return pid;
    } catch {
      return null;
    }
  }
}

function settingsText(settings: Readonly<Record<string, string>>): string {
  const quoted = Object.entries(settings).map(([name, value]) => `${name} = '${value.replaceAll("'", "''")}'`);
  return `\n${quoted.join('\n')}\n`;
}

/** The processes whose parent is `pid`, from /proc (Linux); synchronous, so nothing runs in between. */
function childrenOf(pid: number): number[] {
  return readdirSync('/proc').filter((entry) => /^\d+$/.test(entry) && parentOf(entry) === pid).map(Number);
}

function parentOf(pid: string): number | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null; // gone meanwhile
  }
  // The command, in parentheses, may hold spaces: state and ppid follow its closing parenthesis.
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}
