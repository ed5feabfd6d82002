/**
 * CPU time by who spent it, read from /proc: this Node process (all its
 * threads: activities, workflow threads, the SDK's Rust core), the Postgres
 * server's processes, the Temporal dev server, and everything else on the
 * machine (another test suite, say). On a 2-core box these compete, so a
 * throughput drop is often someone else's CPU, not a slower call.
 */
import { readFile, readdir } from 'node:fs/promises';

/** Linux's USER_HZ; /proc reports process times in these ticks. */
const MS_PER_TICK = 10;

/** CPU milliseconds spent between two snapshots, by who spent them. */
export interface CpuUsage {
  readonly nodeMs: number;
  readonly postgresMs: number;
  readonly temporalMs: number;
  readonly machineBusyMs: number;
  readonly machineTotalMs: number;
}

export interface CpuRoots {
  /** The postmaster's pid, when Postgres runs on this machine. */
  readonly postgres: number | null;
}

/** Per-process times, kept by pid: backends come and go, and one that exited must not count as negative. */
export interface CpuSnapshot {
  readonly node: ReadonlyMap<number, number>;
  readonly postgres: ReadonlyMap<number, number>;
  readonly temporal: ReadonlyMap<number, number>;
  readonly machineBusyMs: number;
  readonly machineTotalMs: number;
}

export async function snapshotCpu(roots: CpuRoots): Promise<CpuSnapshot> {
  const processes = await listProcesses();
  const tree = (root: number | null, filter: (command: string) => boolean = () => true) =>
    new Map(root === null ? [] : descendants(processes, root).filter((entry) => filter(entry.command)).map((entry) => [entry.pid, entry.ms]));
  const machine = await machineMs();
  const postgres = tree(roots.postgres);
  // Backends that exited (pgbench's, a pool's closed connections) are gone from /proc; the postmaster that
  // reaped them keeps their time. A backend alive at the first snapshot and gone at the second counts whole.
  const reaped = roots.postgres === null ? undefined : processes.get(roots.postgres)?.reapedChildrenMs;
  if (reaped !== undefined) postgres.set(REAPED_BY_POSTMASTER, reaped);
  return {
    node: new Map([[process.pid, processes.get(process.pid)?.ms ?? 0]]),
    postgres,
    // The dev server is a child of this process, started by the SDK's core.
    temporal: tree(process.pid, (command) => command.includes('start-dev')),
    machineBusyMs: machine.busy,
    machineTotalMs: machine.total,
  };
}

export function cpuUsed(after: CpuSnapshot, before: CpuSnapshot): CpuUsage {
  return {
    nodeMs: spent(after.node, before.node),
    postgresMs: spent(after.postgres, before.postgres),
    temporalMs: spent(after.temporal, before.temporal),
    machineBusyMs: after.machineBusyMs - before.machineBusyMs,
    machineTotalMs: after.machineTotalMs - before.machineTotalMs,
  };
}

/** Time spent by the processes alive at the end; one that started in between counts from zero. */
function spent(after: ReadonlyMap<number, number>, before: ReadonlyMap<number, number>): number {
  return sum([...after].map(([pid, ms]) => ms - (before.get(pid) ?? 0)));
}

interface ProcessEntry {
  readonly pid: number;
  readonly ppid: number;
  readonly ms: number;
  /** CPU of its children that exited and were waited for (cutime + cstime). */
  readonly reapedChildrenMs: number;
  readonly command: string;
}

/** Not a pid: where a snapshot keeps the postmaster's reaped children's time. */
const REAPED_BY_POSTMASTER = -1;

async function listProcesses(): Promise<Map<number, ProcessEntry>> {
  const entries = new Map<number, ProcessEntry>();
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const entry = await readProcess(Number(name)).catch(() => null); // it may have exited meanwhile
    if (entry) entries.set(entry.pid, entry);
  }
  return entries;
}

async function readProcess(pid: number): Promise<ProcessEntry> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after "(comm)": state is field 3, ppid 4, utime 14, stime 15, cutime 16, cstime 17.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const command = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).replaceAll('\0', ' ');
  return {
    pid,
    ppid: Number(fields[1]),
    ms: (Number(fields[11]) + Number(fields[12])) * MS_PER_TICK,
    reapedChildrenMs: (Number(fields[13]) + Number(fields[14])) * MS_PER_TICK,
    command,
  };
}

function descendants(processes: Map<number, ProcessEntry>, root: number): ProcessEntry[] {
  const found: ProcessEntry[] = [];
  const queue = [root];
  for (let pid = queue.shift(); pid !== undefined; pid = queue.shift()) {
    const entry = processes.get(pid);
    if (entry && pid !== process.pid) found.push(entry);
    for (const child of processes.values()) if (child.ppid === pid) queue.push(child.pid);
  }
  return found;
}

async function machineMs(): Promise<{ busy: number; total: number }> {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n')[0]!;
  const ticks = line.trim().split(/\s+/).slice(1).map(Number);
  const total = sum(ticks);
  const idle = (ticks[3] ?? 0) + (ticks[4] ?? 0); // idle + iowait
  return { busy: (total - idle) * MS_PER_TICK, total: total * MS_PER_TICK };
}

function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}
