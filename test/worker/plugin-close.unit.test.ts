/**
 * `IdempotencyPlugin` closes the store when the worker stops, but a store can serve several workers
 * of one process (two task queues): it closes when the last of them stops, so the store keeps
 * undoing the others' cut claims.
 */
import { describe, expect, it, vi } from 'vitest';
import type { Worker } from '@temporalio/worker';
import { IdempotencyPlugin } from '../../src/index.js';
import { InMemoryClaimStore } from '../../src/testing/index.js';

/** A worker as runWorker sees it, and a way to say when it stops. */
function runningWorker(plugin: IdempotencyPlugin): { stop: () => void; done: Promise<void> } {
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  const worker = { options: { interceptors: { activity: [] } } } as unknown as Worker;
  return { stop, done: plugin.runWorker(worker, () => stopped) };
}

describe('IdempotencyPlugin with one store for two workers', () => {
  it('closes the store when the last worker stops, not the first', async () => {
    const store = new InMemoryClaimStore();
    const close = vi.spyOn(store, 'close');
    const first = runningWorker(new IdempotencyPlugin({ store }));
    const second = runningWorker(new IdempotencyPlugin({ store }));
    first.stop();
    await first.done;
    expect(close, 'the second worker still claims through the store').not.toHaveBeenCalled();
    second.stop();
    await second.done;
    expect(close).toHaveBeenCalledTimes(1);
  });

  it('closes it for one worker alone, and again for a worker started after', async () => {
    const store = new InMemoryClaimStore();
    const close = vi.spyOn(store, 'close');
    const plugin = new IdempotencyPlugin({ store });
    for (let run = 1; run <= 2; run++) {
      const worker = runningWorker(plugin);
      worker.stop();
      await worker.done;
      expect(close).toHaveBeenCalledTimes(run);
    }
  });
});
