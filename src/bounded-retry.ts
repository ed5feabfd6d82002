/**
 * Retries a store write for a bounded time. Used after the external call
 * already happened, where giving up early would lose the record of it.
 */
import { setTimeout as sleep } from 'node:timers/promises';

const FIRST_DELAY_MS = 100;
const MAX_DELAY_MS = 2_000;

/**
 * SQLSTATE classes that say the statement itself is wrong for this data (22 data exception,
 * 23 integrity constraint, 42 syntax or access rule): the same statement fails the same way.
 */
const PERMANENT_SQLSTATE_CLASSES = new Set(['22', '23', '42']);

/**
 * Runs `operation` until it resolves or `budgetMs` has passed; then rethrows its last error. An error
 * `retryable` refuses (by default one that says the statement is wrong for its data) is rethrown at once.
 * With `keepAlive: false` its waits do not keep the process alive: work in the background must not
 * hold up a worker's exit.
 */
export async function retryFor<T>(
  budgetMs: number,
  operation: () => Promise<T>,
  options: { readonly keepAlive?: boolean; readonly retryable?: (error: unknown) => boolean } = {},
): Promise<T> {
  const retryable = options.retryable ?? ((error: unknown) => !isPermanent(error));
  const deadline = Date.now() + budgetMs;
  let delay = FIRST_DELAY_MS;
  for (;;) {
    try {
      return await operation();
    } catch (error) {
      if (!retryable(error) || Date.now() + delay > deadline) throw error;
      await sleep(delay, undefined, { ref: options.keepAlive ?? true });
      delay = Math.min(delay * 2, MAX_DELAY_MS);
    }
  }
}

function isPermanent(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && PERMANENT_SQLSTATE_CLASSES.has(code.slice(0, 2));
}
