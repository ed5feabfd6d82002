/**
 * What an operator reads: claims (listed a page at a time from one cursor, or one by key), what a
 * claim recorded, who waits on it, the operator trail, the audit ledger. Reads change nothing.
 */
import type pg from 'pg';
import type { Payload } from '@temporalio/common';
import type { Claim, Waiter } from '../claim-store.js';
import { toClaim } from '../claim-row.js';
import type { ClaimRow } from '../claim-row.js';
import { ClaimNotFoundError } from '../operator-errors.js';
import { payloadFromJson } from '../payload-json.js';
import type { PayloadJson } from '../payload-json.js';
import type { OperatorContext } from './context.js';
import type { ClaimSummary, LedgerEntry, LedgerFilter, ListFilter, OperatorAction } from './types.js';

export async function* listPages(context: OperatorContext, filter: ListFilter, pageSize: number): AsyncGenerator<ClaimSummary[]> {
  const values = [filter.state ?? null, filter.workflowId ?? null, filter.activityType ?? null, filter.olderThanMs ?? null, filter.limit];
  yield* cursorPages<ClaimSummary>(context, context.sql.claims.list, values, pageSize);
}

export async function show(context: OperatorContext, key: string): Promise<Claim> {
  await context.ready();
  const { rows } = await context.pool.query<ClaimRow>(context.sql.claims.get, [key]);
  if (!rows[0]) throw new ClaimNotFoundError(key);
  return toClaim(rows[0], context.signer);
}

export async function recordedArguments(context: OperatorContext, key: string): Promise<Payload | null> {
  await context.ready();
  const { rows } = await context.pool.query<{ call_arguments: PayloadJson | null }>(context.sql.claims.recordedArguments, [key]);
  if (!rows[0]) throw new ClaimNotFoundError(key);
  return rows[0].call_arguments ? payloadFromJson(rows[0].call_arguments) : null;
}

/** The results `activityType` recorded last (newest first, at most `limit`, none of `exceptKey`), whose records check. */
export async function recordedResults(context: OperatorContext, activityType: string, exceptKey: string, limit: number): Promise<Payload[]> {
  await context.ready();
  const { rows } = await context.pool.query<ClaimRow>(context.sql.claims.recordedResults, [activityType, exceptKey, limit]);
  return rows
    .map((row) => toClaim(row, context.signer))
    .filter((claim) => claim.authenticity === 'verified' || claim.authenticity === 'not-checked')
    .map((claim) => claim.result!);
}

export async function operatorActions(context: OperatorContext, key: string): Promise<OperatorAction[]> {
  await context.ready();
  const { rows } = await context.pool.query<OperatorAction>(context.sql.trail.of, [key]);
  return rows;
}

/** Every workflow to tell about a decision on `key`: the claim's own and every one refused on it, each once. */
export async function waitersOf(
  context: OperatorContext,
  key: string,
  claim?: Pick<Claim, 'namespace' | 'workflowId' | 'runId' | 'activityType'>,
): Promise<Waiter[]> {
  await context.ready();
  const { rows } = await context.pool.query<Waiter>(context.sql.waiters.of, [key]);
  const own: Waiter[] = claim?.workflowId
    ? [{ key, namespace: claim.namespace, workflowId: claim.workflowId, runId: claim.runId, activityType: claim.activityType }]
    : [];
  const seen = new Set<string>();
  return [...own, ...rows].filter((waiter) => {
    const id = `${waiter.namespace}\u0000${waiter.workflowId}`;
    return seen.has(id) ? false : (seen.add(id), true);
  });
}

/**
 * How many claims a ledger query is about (by key or workflow; all of them without either), and how many
 * were made by workers without an audit ledger: for those, no entry does not mean no call.
 */
export async function ledgerCoverage(context: OperatorContext, filter: Omit<LedgerFilter, 'limit'>): Promise<{ claims: number; unaudited: number }> {
  await context.ready();
  const { rows } = await context.pool.query<{ claims: number; unaudited: number }>(context.sql.claims.ledgerCoverage, [
    filter.key ?? null,
    filter.workflowId ?? null,
  ]);
  return rows[0] ?? { claims: 0, unaudited: 0 };
}

export async function* ledgerPages(context: OperatorContext, filter: LedgerFilter, pageSize: number): AsyncGenerator<LedgerEntry[]> {
  yield* cursorPages<LedgerEntry>(context, context.sql.ledger.calls, [filter.key ?? null, filter.workflowId ?? null, filter.limit], pageSize);
}

/**
 * Runs `query` behind a cursor in a read-only transaction (one scan, one snapshot) and yields its rows
 * `pageSize` at a time, so a caller that prints as it goes holds one page, however large the limit.
 * Leaving the loop early closes the cursor (the transaction ends either way).
 */
export async function* cursorPages<R extends pg.QueryResultRow>(context: OperatorContext, query: string, values: unknown[], pageSize: number): AsyncGenerator<R[]> {
  await context.ready();
  const client = await context.pool.connect();
  let open = false;
  let failure: Error | undefined;
  try {
    await client.query('BEGIN READ ONLY');
    open = true;
    await client.query(`DECLARE page_cursor NO SCROLL CURSOR FOR ${query}`, values);
    for (;;) {
      const { rows } = await client.query<R>(`FETCH FORWARD ${Number(pageSize)} FROM page_cursor`);
      if (rows.length > 0) yield rows;
      if (rows.length < pageSize) break;
    }
    await client.query('COMMIT');
    open = false;
  } catch (error) {
    failure = error as Error;
    throw error;
  } finally {
    // A caller that stopped early lands here inside the transaction: ending it closes the cursor.
    // After a failure the connection's state is unknown, and the pool discards it.
    if (open && !failure) await client.query('ROLLBACK').catch(() => undefined);
    client.release(failure);
  }
}
