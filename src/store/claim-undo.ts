/**
 * Claims whose callers were told they failed, though their INSERT may have
 * committed (the connection was lost in flight). Such a caller never calls, so
 * its claim must go, or every retry would be refused for a call that never
 * happened. The backend of a lost connection can outlive it, waiting on a lock
 * or a slow commit, and commit later: a DELETE that finds nothing proves
 * nothing yet. So each is looked for again every second, in one statement for
 * all of them, until it was deleted or its time (twice the lease) is up.
 */
import type { StoreLogger } from './store-logger.js';
import { errorMessage } from '../error-text.js';

/** Deletes the claims that still exist and are still `claimed` under these tokens; returns the tokens it deleted. */
export type UndoClaims = (keys: readonly string[], tokens: readonly string[]) => Promise<readonly string[]>;

interface PendingUndo {
  readonly key: string;
  readonly until: number;
}

const UNDO_EVERY_MS = 1_000;
/** Undone tokens remembered (each is a claim a retry may still read once); old ones go first. */
const REMEMBERED_UNDONE = 10_000;

export class ClaimUndo {
  private readonly pending = new Map<string, PendingUndo>();
  private readonly undone = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private lastError: unknown;
  private soon = false;
  private again = false;

  constructor(
    private readonly undo: UndoClaims,
    private readonly logger: StoreLogger,
  ) {}

  /** Undoes the claim of `token` now and, until `forMs` have passed, again every second while it is not found. */
  add(key: string, token: string, forMs: number): void {
    this.pending.set(token, { key, until: Date.now() + forMs });
    // After the current turn, so the claims of one lost batch go in one statement.
    if (!this.soon) {
      this.soon = true;
      setImmediate(() => {
        this.soon = false;
        void this.runOnce();
      });
    }
    this.timer ??= setInterval(() => void this.runOnce(), UNDO_EVERY_MS).unref();
  }

  /**
   * Whether `token` is a ghost of this store's: a claim being undone here, or undone lately; nothing ran
   * under it, whatever its lease says. Lately too, because a retry may have read it just before a pass deleted it.
   */
  isGhost(token: string): boolean {
    return this.pending.has(token) || this.undone.has(token);
  }

  /**
   * Undoes the claim of `token` at once, for a retry that found it before the next pass would have:
   * true when it is gone. Rejects when Postgres cannot be reached (it is tried again in a second).
   */
  async undoNow(token: string): Promise<boolean> {
    const pending = this.pending.get(token);
    if (!pending) return false;
    const undone = await this.undo([pending.key], [token]);
    if (!undone.includes(token)) return false;
    this.forget(token);
    return true;
  }

  /** Done with `token`: remembered as undone for a while (bounded), for a retry that read it before. */
  private forget(token: string): void {
    this.pending.delete(token);
    this.undone.add(token);
    if (this.undone.size > REMEMBERED_UNDONE) this.undone.delete(this.undone.values().next().value!);
  }

  /**
   * One look now for what is pending (the store is closing). What is still pending is looked for
   * until its time is up all the same, on the timer that keeps no process alive: its backend may
   * commit later, and the store may be closed by one worker while another in the process still
   * claims through it. Forgotten here, such a claim would be refused as an orphan though its call
   * never went out.
   */
  async stop(): Promise<void> {
    await this.runOnce();
  }

  private runOnce(): Promise<void> {
    // One statement at a time; what was added while one ran is looked for right after it.
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.undoPending().finally(() => {
      this.running = undefined;
      if (this.again) {
        this.again = false;
        void this.runOnce();
      }
    });
    return this.running;
  }

  private async undoPending(): Promise<void> {
    if (this.pending.size > 0) {
      const tokens = [...this.pending.keys()];
      try {
        const undone = await this.undo(tokens.map((token) => this.pending.get(token)!.key), tokens);
        for (const token of undone) this.forget(token);
        this.lastError = undefined;
      } catch (error) {
        this.lastError = error; // Postgres may be restarting: tried again in a second
      }
    }
    this.expire();
  }

  private expire(): void {
    const now = Date.now();
    for (const [token, { key, until }] of this.pending) {
      if (until > now) continue;
      this.pending.delete(token);
      // Not found in all that time: it never committed (the usual case). Unreachable the last time: it may have.
      if (this.lastError !== undefined) {
        this.logger.warn('Idempotency: could not undo a claim whose insert may have committed; a retry will find it and refuse', {
          idempotencyKey: key,
          error: errorMessage(this.lastError),
        });
      }
    }
    if (this.pending.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}
