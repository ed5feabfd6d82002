/**
 * An example worker process whose every connection (Postgres, the Temporal frontend, the vendor)
 * goes through a TCP proxy of its own, so the harness can hold any of them at a chosen moment and
 * then SIGKILL the process: the crash is observed and timed from outside, with nothing added to
 * the library or the worker.
 */
import { hostname } from 'node:os';
import { spawnExampleWorker } from '../../../dev/worker-process.js';
import type { WorkerProcess } from '../../../dev/worker-process.js';
import type { TcpProxy } from '../../../dev/tcp-proxy.js';
import { proxyTo, temporalAddressOf } from './proxy-to.js';

export interface WorkerTargets {
  readonly temporalAddress: string;
  readonly databaseUrl: string;
  readonly vendorUrl: string;
  /** Activities only: the workflows run on the campaign's own worker. */
  readonly taskQueue: string;
  readonly schema: string;
  readonly leaseMs: number;
  readonly reconcile: boolean;
}

export interface ProxiedWorker {
  readonly process: WorkerProcess;
  /** How claims name their owner: `claimed_by`. */
  readonly name: string;
  readonly postgres: TcpProxy;
  readonly temporal: TcpProxy;
  readonly vendor: TcpProxy;
  /** SIGKILL, resolved once the process is gone. */
  kill(): Promise<void>;
  /** It exited without the harness killing it: a crash of its own, which fails the run. */
  readonly exitedOnItsOwn: boolean;
  /** Kills it if it still runs and closes its proxies. */
  stop(): Promise<void>;
}

/** `vendorStalled`: the vendor's proxy holds every byte from the start, so nothing the worker sends reaches the vendor. */
export async function spawnProxiedWorker(targets: WorkerTargets, options: { readonly vendorStalled?: boolean } = {}): Promise<ProxiedWorker> {
  const postgres = await proxyTo(targets.databaseUrl);
  const temporal = await proxyTo(`grpc://${targets.temporalAddress}`);
  const vendor = await proxyTo(targets.vendorUrl);
  if (options.vendorStalled) vendor.proxy.stall();
  let child: WorkerProcess;
  try {
    child = await spawnExampleWorker({
      temporalAddress: temporalAddressOf(temporal),
      databaseUrl: postgres.url,
      vendorUrl: vendor.url,
      taskQueue: targets.taskQueue,
      activitiesOnly: true,
      schema: targets.schema,
      leaseMs: targets.leaseMs,
      reconcile: targets.reconcile,
    });
  } catch (error) {
    await Promise.all([postgres, temporal, vendor].map(({ proxy }) => proxy.stop()));
    throw error;
  }
  let killed = false;
  let exitedOnItsOwn = false;
  void child.exited.then(() => void (exitedOnItsOwn = !killed));
  const kill = async () => {
    killed = true;
    child.kill('SIGKILL');
    await child.exited;
  };
  return {
    process: child,
    name: `${hostname()}/${child.pid}`,
    postgres: postgres.proxy,
    temporal: temporal.proxy,
    vendor: vendor.proxy,
    kill,
    get exitedOnItsOwn() {
      return exitedOnItsOwn;
    },
    async stop() {
      await kill();
      await Promise.all([postgres, temporal, vendor].map(({ proxy }) => proxy.stop()));
    },
  };
}
