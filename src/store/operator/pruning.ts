/**
 * Retention: completed claims past a horizon that nobody may still need (never one without an outcome,
 * one a refused workflow may call again for, nor one of a workflow the caller keeps), and the audit
 * ledger's calls, by its owner only. Each prune appends to the operator trail what it deleted.
 */
import { InvalidArgumentError, IdempotencyError } from '../../errors.js';
import { horizonMs, optionalBoolean } from '../operation-inputs.js';
import { quoteIdentifier } from '../identifiers.js';
import { inTransaction } from '../transaction.js';
import { recordOperatorAction } from './context.js';
import type { OperatorContext } from './context.js';
import { cursorPages } from './reads.js';
import type { PruneCandidateWorkflow, PruneScope, PruneSummary } from './types.js';

/** The ledger keeps every call at least this long, whoever prunes it. */
const LEDGER_FLOOR_MS = 24 * 60 * 60_000;

/** Raised when the ledger is to be pruned by a role that does not own it: it is append-only for every other. */
export class LedgerPruneRefusedError extends IdempotencyError {
  override readonly name = 'LedgerPruneRefusedError';
  readonly code = 'ledger-prune-refused';
}

function prunableValues(olderThanMs: number, scope: PruneScope): unknown[] {
  const kept = scope.keepWorkflows ?? [];
  return [olderThanMs, scope.asOf ?? null, kept.map((ref) => ref.namespace), kept.map((ref) => ref.workflowId)];
}

export async function databaseNow(context: OperatorContext): Promise<Date> {
  await context.ready();
  const { rows } = await context.pool.query<{ now: Date }>('SELECT now() AS now');
  return rows[0]!.now;
}

export async function completedClaimNamespaces(context: OperatorContext): Promise<string[]> {
  await context.ready();
  const { rows } = await context.pool.query<{ namespace: string }>(context.sql.claims.completedNamespaces);
  return rows.map((row) => row.namespace);
}

export async function* pruneCandidateWorkflows(
  context: OperatorContext,
  olderThanMs: number,
  scope: PruneScope,
  pageSize: number,
): AsyncGenerator<PruneCandidateWorkflow[]> {
  yield* cursorPages<PruneCandidateWorkflow>(context, context.sql.claims.pruneCandidateWorkflows, prunableValues(olderThanMs, scope), pageSize);
}

export async function pruneSummary(context: OperatorContext, olderThanMs: number, scope: PruneScope): Promise<PruneSummary> {
  horizonMs('olderThanMs', olderThanMs);
  await context.ready();
  const { rows } = await context.pool.query<{ activity_type: string; count: number; oldest: Date; newest: Date }>(
    context.sql.claims.pruneSummary,
    prunableValues(olderThanMs, scope),
  );
  return {
    count: rows.reduce((sum, row) => sum + row.count, 0),
    oldestFinishedAt: rows.reduce<Date | null>((min, row) => (min === null || row.oldest < min ? row.oldest : min), null),
    newestFinishedAt: rows.reduce<Date | null>((max, row) => (max === null || row.newest > max ? row.newest : max), null),
    byActivityType: Object.fromEntries(rows.map((row) => [row.activity_type, row.count])),
  };
}

export async function prune(
  context: OperatorContext,
  olderThanMs: number,
  options: PruneScope & { reason?: string | undefined; forced?: boolean },
): Promise<number> {
  horizonMs('olderThanMs', olderThanMs);
  await context.ready();
  return inTransaction(context.pool, async (client) => {
    const { rows } = await client.query<{ count: number; keys: string[] | null }>(context.sql.claims.prune, prunableValues(olderThanMs, options));
    const rowCount = rows[0]?.count ?? 0;
    const keys = rows[0]?.keys ?? [];
    await client.query(context.sql.waiters.prune, [olderThanMs, options.asOf ?? null]);
    await recordOperatorAction(context, client, {
      action: 'prune',
      key: null,
      reason: options.reason,
      forced: options.forced ?? false,
      before: { olderThanMs, asOf: options.asOf ?? null, keptWorkflows: options.keepWorkflows?.length ?? 0 },
      after: { pruned: rowCount, keys, keysNotListed: rowCount - keys.length },
    });
    return rowCount;
  });
}

/**
 * Deletes (or with `dryRun`, counts) the ledger entries of whole calls whose last entry is older than the
 * horizon: never a call under a day old, nor one any of whose keys still has a claim without an outcome
 * (the runbook needs those). Only the schema's owner may: the ledger is append-only for every other role,
 * by trigger. Returns the entries.
 */
export async function pruneLedger(context: OperatorContext, olderThanMs: number, options: { reason?: string | undefined; dryRun?: boolean }): Promise<number> {
  horizonMs('olderThanMs', olderThanMs);
  optionalBoolean('dryRun', options.dryRun);
  if (olderThanMs < LEDGER_FLOOR_MS) {
    throw new InvalidArgumentError('olderThanMs', 'ClaimOperations: the ledger keeps every call for at least a day: olderThanMs must be at least 86400000.');
  }
  await context.ready();
  // Asked first, so a prune that would fail on the ledger fails before it deletes anything.
  const ledgerTable = `${quoteIdentifier('schema', context.schema)}.ledger`;
  const { rows: owner } = await context.pool.query<{ owns: boolean }>(context.sql.ledger.ownedByMe, [ledgerTable]);
  if (owner[0]?.owns !== true) {
    throw new LedgerPruneRefusedError(
      `The ledger of schema "${context.schema}" is append-only for every role but its owner: prune it as the role that ` +
        'ran migrate (the migrator). Nothing was deleted.',
    );
  }
  if (options.dryRun) {
    const { rows } = await context.pool.query<{ count: number }>(context.sql.ledger.countPrunable, [olderThanMs]);
    return rows[0]?.count ?? 0;
  }
  return inTransaction(context.pool, async (client) => {
    const { rowCount } = await client.query(context.sql.ledger.prune, [olderThanMs]);
    const pruned = rowCount ?? 0;
    await recordOperatorAction(context, client, {
      action: 'prune-ledger',
      key: null,
      reason: options.reason,
      forced: false,
      before: null,
      after: { older_than_ms: olderThanMs, pruned_entries: pruned },
    });
    return pruned;
  });
}
