/**
 * One LISTEN connection per store, shared by every attempt in this process
 * that waits for another attempt's outcome, and held only while someone waits.
 * Best effort: when it cannot listen, waiters still poll.
 */
import type pg from 'pg';

export class ClaimListener {
  private client: pg.PoolClient | undefined;
  private connecting: Promise<void> | undefined;
  private readonly waiters = new Map<string, Set<() => void>>();

  constructor(
    private readonly pool: pg.Pool,
    /** A validated identifier: the schema-derived channel name. */
    private readonly channel: string,
  ) {}

  /** Follows announcements for `key`: `changed(ms)` resolves true on one, false when `ms` pass first. */
  async follow(key: string): Promise<{ changed(timeoutMs: number): Promise<boolean>; close(): void }> {
    let wake: (() => void) | undefined;
    let missed = false; // an announcement that came while nobody was waiting for the next one
    const close = await this.subscribe(key, () => (wake ? wake() : (missed = true)));
    const changed = (timeoutMs: number) =>
      new Promise<boolean>((resolve) => {
        if (missed) {
          missed = false;
          return resolve(true);
        }
        const timer = setTimeout(() => finish(false), timeoutMs);
        const finish = (announced: boolean) => {
          clearTimeout(timer);
          wake = undefined;
          resolve(announced);
        };
        wake = () => finish(true);
      });
    return { changed, close };
  }

  /** Calls `wake` whenever `key` is announced; returns the unsubscribe function. */
  private async subscribe(key: string, wake: () => void): Promise<() => void> {
    const forKey = this.waiters.get(key) ?? new Set();
    forKey.add(wake);
    this.waiters.set(key, forKey);
    await this.listen().catch(() => undefined); // polling covers a failed LISTEN
    return () => {
      forKey.delete(wake);
      if (forKey.size === 0) this.waiters.delete(key);
      if (this.waiters.size === 0) this.unlisten();
    };
  }

  private listen(): Promise<void> {
    if (this.client) return Promise.resolve();
    this.connecting ??= this.connect().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async connect(): Promise<void> {
    const client = await this.pool.connect();
    client.on('notification', (message) => {
      if (message.channel !== this.channel || !message.payload) return;
      for (const wake of this.waiters.get(message.payload) ?? []) wake();
    });
    // A lost connection: waiters fall back to polling; the next subscriber listens again.
    client.on('error', (error) => {
      if (this.client === client) this.client = undefined;
      client.release(error);
    });
    try {
      await client.query(`LISTEN "${this.channel}"`);
    } catch (error) {
      client.release(error as Error);
      throw error;
    }
    this.client = client;
    if (this.waiters.size === 0) this.unlisten();
  }

  private unlisten(): void {
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    client.query('UNLISTEN *').then(
      () => client.release(),
      (error: Error) => client.release(error),
    );
  }
}
