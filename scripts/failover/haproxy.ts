/**
 * HAProxy from Debian's package in front of the cluster, configured as users run
 * it before Postgres: TCP mode, one backend, every node a server health-checked
 * over HTTP against its role endpoint (only the primary answers 200), so the
 * proxy follows a promotion by itself. Sessions to a node marked down are shut,
 * so no worker keeps talking to a dead primary through a half-open connection.
 */
import { execFileSync, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ProxiedNode {
  readonly name: string;
  readonly port: number;
  /** Where its role endpoint listens. */
  readonly checkPort: number;
}

/** Whether an `haproxy` binary runs here. */
export function haproxyInstalled(): boolean {
  try {
    execFileSync('haproxy', ['-v'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Checked this often; one failed check marks a node down, one passed marks it up. */
const CHECK_INTERVAL_MS = 250;

function configText(port: number, statsSocket: string, nodes: readonly ProxiedNode[]): string {
  return `global
  stats socket ${statsSocket} mode 600 level admin

defaults
  mode tcp
  timeout connect 2s
  # A pool's idle connection lives longer than a request: the proxy must not cut it.
  timeout client 1h
  timeout server 1h
  timeout check 1s

frontend postgres
  bind 127.0.0.1:${port}
  default_backend primary

backend primary
  option httpchk GET /primary
  http-check expect status 200
  default-server inter ${CHECK_INTERVAL_MS}ms fall 1 rise 1 on-marked-down shutdown-sessions
${nodes.map((node) => `  server ${node.name} 127.0.0.1:${node.port} check port ${node.checkPort}`).join('\n')}
`;
}

export class HAProxy {
  private exited: Promise<void> | undefined;
  private child: ReturnType<typeof spawn> | undefined;
  private output = '';

  constructor(
    private readonly directory: string,
    readonly port: number,
    private readonly nodes: readonly ProxiedNode[],
  ) {}

  get statsSocket(): string {
    return join(this.directory, 'haproxy.sock');
  }

  async start(): Promise<void> {
    const config = join(this.directory, 'haproxy.cfg');
    await writeFile(config, configText(this.port, this.statsSocket, this.nodes));
    // -db: in the foreground, so it is this process's child and ends with it.
    const child = spawn('haproxy', ['-db', '-f', config], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    child.stdout.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
  }

  /** Resolves once the proxy routes to `name` alone (every other node marked down), or throws after `timeoutMs`. */
  async routesTo(name: string, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let states: Record<string, string> = {};
    while (Date.now() < deadline) {
      states = await this.serverStates().catch(() => ({}));
      const up = Object.entries(states).filter(([, status]) => status.startsWith('UP'));
      if (up.length === 1 && up[0]![0] === name && Object.keys(states).length === this.nodes.length) return;
      await sleep(CHECK_INTERVAL_MS / 2);
    }
    throw new Error(`HAProxy did not route to ${name} alone within ${timeoutMs} ms: ${JSON.stringify(states)}\n${this.output}`);
  }

  /** Each server's status (`UP`, `DOWN`, …) from the runtime API on the stats socket. */
  async serverStates(): Promise<Record<string, string>> {
    const csv = await this.runtimeCommand('show stat');
    const [header, ...rows] = csv.replace(/^# /, '').trim().split('\n');
    const columns = header!.split(',');
    const at = (name: string) => columns.indexOf(name);
    const states: Record<string, string> = {};
    for (const row of rows.map((line) => line.split(','))) {
      if (row[at('pxname')] === 'primary' && !['BACKEND', 'FRONTEND'].includes(row[at('svname')]!)) states[row[at('svname')]!] = row[at('status')]!;
    }
    return states;
  }

  async stop(): Promise<void> {
    if (!this.child || this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGTERM');
    const killLater = setTimeout(() => this.child?.kill('SIGKILL'), 5_000);
    await this.exited;
    clearTimeout(killLater);
  }

  private runtimeCommand(command: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(this.statsSocket);
      let answer = '';
      socket.on('connect', () => socket.end(`${command}\n`));
      socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
      socket.on('end', () => resolve(answer));
      socket.on('error', reject);
    });
  }
}
