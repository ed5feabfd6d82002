/**
 * A pool cut off from Postgres at the worst moment, and a bound on waiting for what should follow:
 * for the tests of what a worker tells, and to whom, when a claim's answer is lost.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';

/** `promise`, or a rejection naming `what` once `ms` passed. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([promise, sleep(ms).then(() => Promise.reject(new Error(`${what} (still waiting after ${ms} ms)`)))]);
}

/**
 * The real pool, but once armed (at once with `armed: true`): the next claim INSERT commits and its
 * answer is lost, then nothing reaches Postgres until `heal()`.
 */
export function partitionedPool(real: pg.Pool, options: { armed?: boolean } = {}): { pool: pg.Pool; arm: () => void; heal: () => void; lost: () => boolean } {
  let armed = options.armed ?? false;
  let partitioned = false;
  let lostOne = false;
  const query = async (config: unknown, values?: unknown) => {
    if (partitioned) throw new Error('Connection terminated unexpectedly');
    const name = (config as { name?: unknown } | null)?.name;
    if (armed && !lostOne && typeof name === 'string' && name.endsWith('_claim')) {
      await real.query(config as pg.QueryConfig); // committed on the server…
      lostOne = true;
      partitioned = true;
      throw new Error('Connection terminated unexpectedly'); // …the answer lost, and the network with it
    }
    return real.query(config as pg.QueryConfig, values as unknown[]);
  };
  const pool = new Proxy(real, {
    get(target, property) {
      if (property === 'query') return query;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { pool, arm: () => void (armed = true), heal: () => void (partitioned = false), lost: () => lostOne };
}
