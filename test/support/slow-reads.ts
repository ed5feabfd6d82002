/** A worker's pool whose answer to one read can be held back: reads answering out of order, as under load. */
import pg from 'pg';

export interface SlowReadPool {
  readonly pool: pg.Pool;
  /** The store's next `get` answers only once the returned function is called. */
  holdNextGet(): () => void;
}

export function poolWithSlowReads(connectionString: string): SlowReadPool {
  const pool = new pg.Pool({ connectionString, max: 4 });
  pool.on('error', () => undefined);
  let held: Promise<void> | undefined;
  const realQuery = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
  (pool as unknown as { query: unknown }).query = async (...args: unknown[]) => {
    const config = args[0] as { name?: string };
    const gate = typeof config === 'object' && config.name?.endsWith('_get') ? held : undefined;
    if (gate) held = undefined;
    const result = await realQuery(...args);
    if (gate) await gate;
    return result;
  };
  return {
    pool,
    holdNextGet: () => {
      let release!: () => void;
      held = new Promise<void>((resolve) => (release = resolve));
      return release;
    },
  };
}
