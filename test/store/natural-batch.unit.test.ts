/**
 * Natural batching, on its own: an item that finds a statement free goes at
 * once and alone; items that arrive while statements are in flight go
 * together in the next one; every item gets its own outcome.
 */
import { describe, expect, it, vi } from 'vitest';
import { NaturalBatch } from '../../src/store/natural-batch.js';
import type { Settled } from '../../src/store/natural-batch.js';

/** A statement sender the test finishes by hand, recording what each statement carried. */
function heldSender() {
  const sent: number[][] = [];
  const finishers: (() => void)[] = [];
  return {
    sent,
    send: (items: readonly number[]): Promise<readonly Settled<number>[]> => {
      sent.push([...items]);
      return new Promise((resolve) =>
        finishers.push(() => resolve(items.map((item) => (item < 0 ? { ok: false, error: new Error(`bad ${item}`) } : { ok: true, value: item * 10 })))),
      );
    },
    finishOldest: () => finishers.shift()?.(),
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('NaturalBatch', () => {
  it('sends an item that finds a statement free at once, alone, with no timer', () => {
    const sender = heldSender();
    const batch = new NaturalBatch({ send: sender.send, maxInFlight: 2, maxBatch: 100, stalledAfterMs: 60_000 });
    void batch.submit(1);
    expect(sender.sent).toEqual([[1]]);
  });

  it('sends what arrived while the statements were in flight together in the next one, and settles each item', async () => {
    const sender = heldSender();
    const batch = new NaturalBatch({ send: sender.send, maxInFlight: 2, maxBatch: 100, stalledAfterMs: 60_000 });
    const answers = [1, 2, 3, 4, 5].map((item) => batch.submit(item));
    expect(sender.sent).toEqual([[1], [2]]);
    sender.finishOldest();
    await tick();
    expect(sender.sent).toEqual([[1], [2], [3, 4, 5]]);
    sender.finishOldest();
    sender.finishOldest();
    await expect(Promise.all(answers)).resolves.toEqual([10, 20, 30, 40, 50]);
  });

  it('carries at most maxBatch items a statement', async () => {
    const sender = heldSender();
    const batch = new NaturalBatch({ send: sender.send, maxInFlight: 1, maxBatch: 2, stalledAfterMs: 60_000 });
    const answers = [1, 2, 3, 4, 5, 6].map((item) => batch.submit(item));
    for (let statement = 0; statement < 4; statement++) {
      sender.finishOldest();
      await tick();
    }
    expect(sender.sent).toEqual([[1], [2, 3], [4, 5], [6]]);
    await expect(Promise.all(answers)).resolves.toEqual([10, 20, 30, 40, 50, 60]);
  });

  it('stops waiting for a stalled statement before sending the next, and still settles its items when it returns', async () => {
    vi.useFakeTimers();
    try {
      const sender = heldSender();
      const batch = new NaturalBatch({ send: sender.send, maxInFlight: 1, maxBatch: 100, stalledAfterMs: 500 });
      const stuck = batch.submit(1);
      const later = [batch.submit(2), batch.submit(3)];
      await vi.advanceTimersByTimeAsync(499);
      expect(sender.sent).toEqual([[1]]);
      await vi.advanceTimersByTimeAsync(1);
      expect(sender.sent).toEqual([[1], [2, 3]]);
      sender.finishOldest(); // the stalled one returns at last
      sender.finishOldest();
      await expect(stuck).resolves.toBe(10);
      await expect(Promise.all(later)).resolves.toEqual([20, 30]);
      // A freed slot is not freed twice: one statement in flight again, and the next waits for it.
      const [four, five] = [batch.submit(4), batch.submit(5)];
      expect(sender.sent.at(-1)).toEqual([4]);
      sender.finishOldest();
      await vi.advanceTimersByTimeAsync(0);
      expect(sender.sent.at(-1)).toEqual([5]);
      sender.finishOldest();
      await expect(Promise.all([four, five])).resolves.toEqual([40, 50]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("keeps one item's failure its own", async () => {
    const sender = heldSender();
    const batch = new NaturalBatch({ send: sender.send, maxInFlight: 1, maxBatch: 100, stalledAfterMs: 60_000 });
    const first = batch.submit(1);
    const [good, bad, alsoGood] = [batch.submit(2), batch.submit(-3), batch.submit(4)];
    sender.finishOldest();
    await tick();
    sender.finishOldest();
    await expect(first).resolves.toBe(10);
    await expect(good).resolves.toBe(20);
    await expect(bad).rejects.toThrow('bad -3');
    await expect(alsoGood).resolves.toBe(40);
  });

  it('fails every item of a statement whose sender rejects, and goes on with the next', async () => {
    let calls = 0;
    const batch = new NaturalBatch<number, number>({
      send: async (items) => {
        if (++calls === 1) throw new Error('connection lost');
        return items.map((item) => ({ ok: true, value: item }));
      },
      maxInFlight: 1,
      maxBatch: 100,
      stalledAfterMs: 60_000,
    });
    await expect(batch.submit(1)).rejects.toThrow('connection lost');
    await expect(batch.submit(2)).resolves.toBe(2);
  });
});
