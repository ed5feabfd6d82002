/**
 * Natural batching: items that arrive while enough statements are already in
 * flight wait for the next statement and go out together in it. No timer: an
 * item that finds a free slot goes at once, alone, so one activity in flight
 * pays nothing; under load one commit carries many claims instead of one each.
 */

/** What one item of a batch came to: its own value or its own error, never a neighbour's. */
export type Settled<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown };

export interface NaturalBatchOptions<I, O> {
  /** Sends the items (one or more) in one statement; settles each of them. Must not reject. */
  readonly send: (items: readonly I[]) => Promise<readonly Settled<O>[]>;
  /** Statements in flight at once; the fewer, the more each one carries under load. */
  readonly maxInFlight: number;
  readonly maxBatch: number;
  /**
   * A statement in flight longer than this stops counting against `maxInFlight` (its items still wait
   * for it): one stuck on a dead connection must not hold up every later item, which alone, each on a
   * connection of its own, it would not have.
   */
  readonly stalledAfterMs: number;
}

interface Waiting<I, O> {
  readonly item: I;
  readonly resolve: (value: O) => void;
  readonly reject: (error: unknown) => void;
}

export class NaturalBatch<I, O> {
  private readonly queue: Waiting<I, O>[] = [];
  private inFlight = 0;

  constructor(private readonly options: NaturalBatchOptions<I, O>) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (this.inFlight < this.options.maxInFlight) this.sendNext();
    });
  }

  private sendNext(): void {
    const batch = this.queue.splice(0, this.options.maxBatch);
    if (batch.length === 0) return;
    this.inFlight++;
    let counted = true;
    const freeSlot = () => {
      if (!counted) return;
      counted = false;
      this.inFlight--;
      if (this.queue.length > 0 && this.inFlight < this.options.maxInFlight) this.sendNext();
    };
    const stalled = setTimeout(freeSlot, this.options.stalledAfterMs);
    stalled.unref();
    void this.sendBatch(batch).finally(() => {
      clearTimeout(stalled);
      freeSlot();
    });
  }

  private async sendBatch(batch: readonly Waiting<I, O>[]): Promise<void> {
    let settled: readonly Settled<O>[];
    try {
      settled = await this.options.send(batch.map((waiting) => waiting.item));
    } catch (error) {
      settled = batch.map(() => ({ ok: false, error }));
    }
    batch.forEach((waiting, index) => {
      // A sender that settles fewer items than it was given is a defect; its callers still get an answer.
      const outcome = settled[index] ?? { ok: false, error: new RangeError(`the batch sender settled ${settled.length} of ${batch.length} items`) };
      if (outcome.ok) waiting.resolve(outcome.value);
      else waiting.reject(outcome.error);
    });
  }
}

/** Settles a promise into a `Settled`, so one item's failure stays its own. */
export async function settle<T>(promise: Promise<T>): Promise<Settled<T>> {
  try {
    return { ok: true, value: await promise };
  } catch (error) {
    return { ok: false, error };
  }
}
