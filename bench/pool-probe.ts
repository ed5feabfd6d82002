/**
 * Watches a pool from the outside: how many statements went through it, how
 * long each took by kind, and how many found no idle connection and had to
 * wait for one. Only the promise form of `query` is used by the store.
 */
import { performance } from 'node:perf_hooks';
import type pg from 'pg';

export interface PoolCounts {
  statements: number;
  /** Statements issued while every connection was busy and the pool was full. */
  queuedForConnection: number;
  /** Milliseconds per statement, by the store's name for it (claim, complete...), else by its first keyword. */
  readonly latencyByKind: Map<string, number[]>;
}

export function probePool(pool: pg.Pool): PoolCounts {
  const counts: PoolCounts = { statements: 0, queuedForConnection: 0, latencyByKind: new Map() };
  const original = pool.query;
  const probed = (...args: unknown[]): unknown => {
    counts.statements++;
    if (pool.idleCount === 0 && pool.totalCount >= (pool.options.max ?? 10)) counts.queuedForConnection++;
    const config = typeof args[0] === 'string' ? { text: args[0] } : ((args[0] ?? {}) as { text?: string; name?: string });
    // The store's named statements by name (claim, claim_batch, complete...), the rest by first keyword.
    const kind = config.name?.replace(/^ti_[0-9a-f]+_/, '') ?? /^\s*(\w+)/.exec(config.text ?? '')?.[1]?.toUpperCase() ?? '?';
    const started = performance.now();
    const result: unknown = Reflect.apply(original, pool, args);
    if (result instanceof Promise) {
      void result.then(
        () => record(counts, kind, performance.now() - started),
        () => undefined,
      );
    }
    return result;
  };
  pool.query = probed as typeof pool.query;
  return counts;
}

export function resetCounts(counts: PoolCounts): void {
  counts.statements = 0;
  counts.queuedForConnection = 0;
  counts.latencyByKind.clear();
}

function record(counts: PoolCounts, kind: string, ms: number): void {
  const samples = counts.latencyByKind.get(kind) ?? [];
  samples.push(ms);
  counts.latencyByKind.set(kind, samples);
}
