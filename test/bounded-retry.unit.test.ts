/**
 * `retryFor`, the bounded retry of a store write after the external call: an
 * error the same statement would hit again (SQLSTATE class 22 data, 23
 * integrity, 42 syntax or access) ends it at once, so a claim is not left
 * `claimed` for `recordRetryMs` over a U+0000 in a note; a lost connection is
 * retried until the budget is spent. No services.
 */
import { describe, expect, it } from 'vitest';
import { retryFor } from '../src/bounded-retry.js';

const pgError = (code: string, message = `SQLSTATE ${code}`) => Object.assign(new Error(message), { code });

/** Runs `retryFor` over an operation that always throws `error`; returns what it threw and how often it ran. */
async function alwaysFailing(error: unknown, budgetMs: number) {
  let attempts = 0;
  const started = Date.now();
  const thrown = await retryFor(budgetMs, async () => {
    attempts++;
    throw error;
  }).catch((caught: unknown) => caught);
  return { thrown, attempts, elapsedMs: Date.now() - started };
}

describe('retryFor', () => {
  it.each([
    ['22021', 'invalid byte sequence for encoding "UTF8": 0x00'],
    ['22P02', 'invalid input syntax for type json'],
    ['23505', 'duplicate key value violates unique constraint'],
    ['42501', 'permission denied for table claims'],
    ['42P01', 'relation "claims" does not exist'],
  ])('throws a class %s error at once, after one attempt', async (code, message) => {
    const error = pgError(code, message);
    const { thrown, attempts, elapsedMs } = await alwaysFailing(error, 5_000);
    expect(thrown).toBe(error);
    expect(attempts).toBe(1);
    expect(elapsedMs).toBeLessThan(100); // no backoff sleep before giving up
  });

  it.each([
    ['a connection refused', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })],
    ['a connection ended by the server (57P01)', pgError('57P01', 'terminating connection due to administrator command')],
    ['a connection failure (08006)', pgError('08006', 'connection failure')],
    ['an error without a code', new Error('Connection terminated unexpectedly')],
  ])('retries %s until the budget is spent, then rethrows it', async (_name, error) => {
    // Backoff 100 ms, then 200 ms: attempts at about 0, 100 and 300 ms; the next (after 400 ms more) would pass
    // 450 ms. A loaded machine may fire a timer late and fit one attempt fewer, never one more.
    const { thrown, attempts, elapsedMs } = await alwaysFailing(error, 450);
    expect(thrown).toBe(error);
    expect(attempts).toBeGreaterThanOrEqual(2);
    expect(attempts).toBeLessThanOrEqual(3);
    expect(elapsedMs).toBeGreaterThanOrEqual(95);
    expect(elapsedMs).toBeLessThan(450 + 250); // it stops at the budget (plus a late timer), not after it
  });

  it('returns the first success after a retried connection error', async () => {
    let attempts = 0;
    const result = await retryFor(5_000, async () => {
      if (++attempts < 3) throw pgError('08006', 'connection failure');
      return 'recorded';
    });
    expect(result).toBe('recorded');
    expect(attempts).toBe(3);
  });

  it('does not take a code that only looks like a class-22 SQLSTATE for one', async () => {
    // Node's own codes are not SQLSTATEs; only five characters of digits and capitals are.
    const { attempts } = await alwaysFailing(Object.assign(new Error('socket hang up'), { code: '22' }), 150);
    expect(attempts).toBeGreaterThan(1);
  });
});
