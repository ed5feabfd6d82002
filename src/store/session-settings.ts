/**
 * Settings of one connection, for a pool its owner configures (the CLI's): sent
 * as statements after connecting, not as startup parameters, which connection
 * poolers (PgBouncer) refuse.
 */
import type pg from 'pg';
import { InvalidArgumentError } from '../errors.js';

/** `set_config`, not `SET`: `SET` takes no parameters, and the value goes in one. Session-wide, as `SET` is. */
const SET_STATEMENT_TIMEOUT = `
SELECT set_config('statement_timeout', $1, false)`;

/**
 * Limits every later statement on `client` to `ms` milliseconds (rounded, as Postgres keeps them).
 * For pg-pool's `onConnect`, which awaits it before the pool hands the connection out.
 */
export async function setStatementTimeout(client: pg.ClientBase, ms: number): Promise<void> {
  const wholeMs = Math.round(ms);
  // 0 would mean no limit at all: a caller that meant one must not get none.
  if (!Number.isFinite(wholeMs) || wholeMs < 1) {
    throw new InvalidArgumentError('ms', `setStatementTimeout needs a finite number of milliseconds, at least 1; got ${String(ms)}.`);
  }
  await client.query(SET_STATEMENT_TIMEOUT, [String(wholeMs)]);
}
