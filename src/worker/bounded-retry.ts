/**
 * Retries a store write for a bounded time. Used after the external call
 * already happened, where giving up early would lose the record of it.
 */
import { setTimeout as sleep } from 'node:timers/promises';

const FIRST_DELAY_MS = 100;
const MAX_DELAY_MS = 2_000;

/** Runs `operation` until it resolves or `budgetMs` has passed; then rethrows its last error. */
export async function retryFor<T>(budgetMs: number, operation: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + budgetMs;
  let delay = FIRST_DELAY_MS;
  for (;;) {
    try {
      return await operation();
    } catch (error) {
      if (Date.now() + delay > deadline) throw error;
      await sleep(delay);
      delay = Math.min(delay * 2, MAX_DELAY_MS);
    }
  }
}
