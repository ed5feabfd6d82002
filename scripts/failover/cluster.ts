/**
 * A primary, a standby streaming from it over a delayed link, and HAProxy
 * in front, on the machine's own Postgres binaries. `failover()` does what a
 * failover manager does when the primary's host dies: notices (after
 * `detectMs`), promotes the standby, reads what it kept, and puts it in service;
 * the proxy follows through its health checks, the workers' address unchanged.
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { freePort } from '../../dev/free-port.js';
import { Teardown } from '../../dev/teardown.js';
import { HAProxy } from './haproxy.js';
import { PostgresNode } from './postgres-node.js';
import { ReplicationLink } from './replication-link.js';
import { RoleCheck } from './role-check.js';

export type Replication = 'sync' | 'async';

export interface ClusterOptions {
  readonly replication: Replication;
  /** One-way latency of the link the standby streams over. */
  readonly linkDelayMs: number;
}

export interface FailoverTimeline<Kept> {
  /** Milliseconds from the kill: the standby promoted, and the proxy routing to it. */
  readonly promotedAfterMs: number;
  readonly followedAfterMs: number;
  /** When (`Date.now()`) the promoted node was put in service: no worker could write to it before. */
  readonly inServiceAt: number;
  /** What `keep` read from the promoted node before any worker could reach it. */
  readonly kept: Kept;
}

const STANDBY = 'node2';

export class FailoverCluster {
  private constructor(
    private readonly teardown: Teardown,
    private readonly primary: PostgresNode,
    private readonly standby: PostgresNode,
    private readonly link: ReplicationLink,
    private readonly standbyCheck: RoleCheck,
    private readonly proxy: HAProxy,
  ) {}

  /** What the workers use, before and after the failover. */
  get proxyUrl(): string {
    return `postgres://postgres@127.0.0.1:${this.proxy.port}/postgres`;
  }

  static async start(options: ClusterOptions): Promise<FailoverCluster> {
    const teardown = new Teardown();
    try {
      const root = await teardown.start(
        () => mkdtemp(join(tmpdir(), 'temporal-idempotency-failover-')),
        (path) => rm(path, { recursive: true, force: true }),
      );
      await chmod(root, 0o755); // the `postgres` user must reach the data directories inside
      const primary = await PostgresNode.initPrimary('node1', root, await freePort(), {
        listen_addresses: '127.0.0.1',
        unix_socket_directories: '',
        max_connections: '300',
        wal_level: 'replica',
        max_wal_senders: '4',
        wal_keep_size: '256MB',
        synchronous_commit: 'on',
        synchronous_standby_names: options.replication === 'sync' ? STANDBY : '',
      });
      await teardown.start(() => primary.start(), () => primary.stop());
      const link = new ReplicationLink(primary.port, options.linkDelayMs);
      const linkPort = await teardown.start(() => link.start(), () => link.stop());
      const standby = await PostgresNode.cloneStandby(STANDBY, root, await freePort(), primary, {
        upstreamPort: linkPort,
        applicationName: STANDBY,
        // Alone once promoted, it would wait for ever for a standby of its own; a failover manager
        // (Patroni outside strict mode) lifts the requirement the same way.
        settings: { synchronous_standby_names: '' },
      });
      await teardown.start(() => standby.start(), () => standby.stop());
      await streaming(primary, options.replication);

      const primaryCheck = new RoleCheck(primary.connectionString, { inService: true });
      const standbyCheck = new RoleCheck(standby.connectionString, { inService: false });
      const [primaryCheckPort, standbyCheckPort] = await Promise.all(
        [primaryCheck, standbyCheck].map((check) => teardown.start(() => check.start(), () => check.stop())),
      );
      const proxy = new HAProxy(root, await freePort(), [
        { name: 'node1', port: primary.port, checkPort: primaryCheckPort! },
        { name: STANDBY, port: standby.port, checkPort: standbyCheckPort! },
      ]);
      await teardown.start(() => proxy.start(), () => proxy.stop());
      await proxy.routesTo('node1');
      return new FailoverCluster(teardown, primary, standby, link, standbyCheck, proxy);
    } catch (error) {
      await teardown.done();
      throw error;
    }
  }

  /**
   * Kills the primary's host; after `detectMs` (the failover manager deciding it is dead) promotes
   * the standby, reads it with `keep`, and puts it in service.
   */
  async failover<Kept>(detectMs: number, keep: (promotedUrl: string) => Promise<Kept>): Promise<FailoverTimeline<Kept>> {
    const killHost = await this.primary.hostKiller();
    // The host and its side of the link die in one synchronous step.
    const killedAt = Date.now();
    killHost();
    this.link.sever();
    await sleep(detectMs);
    await this.standby.promote();
    const promotedAfterMs = Date.now() - killedAt;
    const kept = await keep(this.standby.connectionString);
    const inServiceAt = Date.now();
    this.standbyCheck.inService = true;
    await this.proxy.routesTo(STANDBY);
    return { promotedAfterMs, followedAfterMs: Date.now() - killedAt, inServiceAt, kept };
  }

  /**
   * Starts the killed primary's data alone (crash recovery, no standby, a port no worker knows) and
   * reads it with `read`: what it had committed when it died.
   */
  async readDeadPrimary<Read>(read: (url: string) => Promise<Read>): Promise<Read> {
    await this.primary.startAlone(await freePort());
    try {
      return await read(this.primary.connectionString);
    } finally {
      await this.primary.stop();
    }
  }

  async stop(): Promise<void> {
    await this.teardown.done();
  }
}

/** Waits until the standby streams from the primary, as synchronous or asynchronous as asked. */
async function streaming(primary: PostgresNode, replication: Replication): Promise<void> {
  const wanted = replication === 'sync' ? 'sync' : 'async';
  const client = new pg.Client({ connectionString: primary.connectionString });
  await client.connect();
  try {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const { rows } = await client.query<{ sync_state: string }>(
        `SELECT sync_state FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming'`,
        [STANDBY],
      );
      if (rows[0]?.sync_state === wanted) return;
      await sleep(100);
    }
    throw new Error(`The standby did not stream ${wanted}hronously within 30 s:\n${await primary.recentLog()}`);
  } finally {
    await client.end();
  }
}
