/**
 * One LISTEN connection per store, shared by every attempt in this process
 * that waits for another attempt's outcome, and held only while someone waits.
 *
 * The connection is the store's own client, never one borrowed from the pool:
 * a pooled client returned with its listeners still attached was released
 * twice on an idle error (a crash), and with `max: 1` the LISTEN held the
 * pool's only connection, so the waiter could never read the claim it waited
 * on. The client reconnects while anyone waits; until it does, waiters poll.
 */
import pg from 'pg';
import type { StoreLogger } from './store-logger.js';

/** Reconnect backoff: first retry soon, then no faster than this while Postgres is away. */
const RECONNECT_FIRST_MS = 250;
const RECONNECT_MAX_MS = 5_000;
/** Keep the connection this long after the last waiter leaves, so bursts of waits reuse it. */
const IDLE_CLOSE_MS = 10_000;
/** A waiter stops waiting for LISTEN after this and polls: a stalled connection must not hang it. */
const LISTEN_WAIT_MS = 3_000;

export interface KeyFollower {
  /** Resolves true on an announcement (or a reconnect, after which one may have been missed), false when `ms` pass first. */
  changed(timeoutMs: number): Promise<boolean>;
  close(): void;
}

export class ClaimListener {
  private client: pg.Client | undefined;
  private listening = false;
  private connecting: Promise<void> | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private reconnectDelay = RECONNECT_FIRST_MS;
  private stopped = false;
  private readonly waiters = new Map<string, Set<() => void>>();

  constructor(
    private readonly connectionConfig: pg.ClientConfig,
    /** A validated identifier: the schema-derived channel name. */
    private readonly channel: string,
    private readonly logger: StoreLogger,
  ) {}

  /** Whether announcements reach this process right now. */
  get notifying(): boolean {
    return this.listening;
  }

  /** Follows announcements for `key` until `close()`. */
  async follow(key: string): Promise<KeyFollower> {
    let wake: (() => void) | undefined;
    let missed = false; // an announcement that came while nobody was waiting for the next one
    const close = this.subscribe(key, () => (wake ? wake() : (missed = true)));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.ensureListening(), new Promise<void>((resolve) => (timer = setTimeout(resolve, LISTEN_WAIT_MS).unref()))]);
    clearTimeout(timer);
    const changed = (timeoutMs: number) =>
      new Promise<boolean>((resolve) => {
        if (missed) {
          missed = false;
          return resolve(true);
        }
        // Clears only its own wake-up: an earlier, abandoned wait must not disarm a later one.
        const finish = (announced: boolean) => {
          clearTimeout(timer);
          if (wake === onWake) wake = undefined;
          resolve(announced);
        };
        const onWake = () => finish(true);
        const timer = setTimeout(() => finish(false), timeoutMs);
        wake = onWake;
      });
    return { changed, close };
  }

  /**
   * Ends the connection (worker shutdown). Waiters left behind fall back to polling; a later
   * `follow()` (another worker sharing the store) connects again.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    clearTimeout(this.idleTimer);
    await this.disconnect();
  }

  private subscribe(key: string, wake: () => void): () => void {
    this.stopped = false;
    clearTimeout(this.idleTimer);
    const forKey = this.waiters.get(key) ?? new Set();
    forKey.add(wake);
    this.waiters.set(key, forKey);
    return () => {
      forKey.delete(wake);
      if (forKey.size === 0) this.waiters.delete(key);
      if (this.waiters.size === 0) {
        this.idleTimer = setTimeout(() => void this.closeIfIdle(), IDLE_CLOSE_MS).unref();
      }
    };
  }

  /** Best effort: a failed LISTEN leaves waiters polling and schedules a reconnect. */
  private async ensureListening(): Promise<void> {
    if (this.listening || this.stopped) return;
    this.connecting ??= this.connect().finally(() => (this.connecting = undefined));
    await this.connecting;
  }

  private async connect(): Promise<void> {
    const client = new pg.Client(this.connectionConfig);
    // Attached before connecting, so an error at any point is handled here, never uncaught.
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client, undefined));
    client.on('notification', (message) => {
      if (message.channel !== this.channel || !message.payload) return;
      for (const wake of this.waiters.get(message.payload) ?? []) wake();
    });
    this.client = client;
    try {
      await client.connect();
      // Bounded: a connection that stalls here is dropped and tried again, never waited on for ever.
      await client.query({ text: `LISTEN "${this.channel}"`, query_timeout: LISTEN_WAIT_MS } as pg.QueryConfig);
    } catch (error) {
      this.lost(client, error);
      return;
    }
    if (this.client !== client) return; // lost while connecting
    this.listening = true;
    this.reconnectDelay = RECONNECT_FIRST_MS;
    // Announcements made while we were not listening are gone: let every waiter re-read.
    for (const wakers of this.waiters.values()) for (const wake of wakers) wake();
  }

  private lost(client: pg.Client, error: unknown): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.listening = false;
    client.end().catch(() => undefined);
    if (this.stopped) return;
    if (error !== undefined) {
      this.logger.warn('Idempotency: the LISTEN connection for claim outcomes failed; waiting attempts poll until it is back', {
        error,
      });
    }
    if (this.waiters.size > 0) this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.reconnectTimer) return;
    const delay = this.reconnectDelay;
    this.reconnectDelay = Math.min(delay * 2, RECONNECT_MAX_MS);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      if (this.waiters.size > 0) void this.ensureListening();
    }, delay).unref();
  }

  private async closeIfIdle(): Promise<void> {
    if (this.waiters.size === 0) await this.disconnect();
  }

  private async disconnect(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.listening = false;
    await client?.end().catch(() => undefined);
  }
}
