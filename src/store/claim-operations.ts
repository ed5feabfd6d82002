/**
 * What an operator does to claims after a refusal: look, resolve, release,
 * prune, read the ledger. The CLI only parses, prints and maps errors to exit
 * codes; every statement lives here, beside the ones the workers send. Every
 * change runs in a transaction that first locks and checks the claim, so a
 * refused request changes nothing and says why.
 */
import type pg from 'pg';
import type { Payload } from '@temporalio/common';
import type { Claim, Waiter } from './claim-store.js';
import { CLAIM_READ, OWNER_ALIVE, toClaim } from './claim-row.js';
import type { ClaimRow } from './claim-row.js';
import { DEFAULT_SCHEMA, outcomeChannel, quoteIdentifier } from './identifiers.js';
import { ClaimChangeRefusedError, ClaimNotFoundError, changeRefusal } from './operator-errors.js';
import { payloadToJson } from './payload-json.js';
import { pgText } from './pg-text.js';
import { inTransaction } from './transaction.js';

export const CLAIM_STATES = ['claimed', 'completed', 'unknown', 'open'] as const;

export interface ListFilter {
  /** `open`: every claim without an outcome (`claimed` or `unknown`). */
  readonly state?: (typeof CLAIM_STATES)[number] | undefined;
  readonly workflowId?: string | undefined;
  readonly activityType?: string | undefined;
  readonly olderThanMs?: number | undefined;
  readonly limit: number;
}

/** A claim as `list` shows it: no result payloads, which can be large and are never printed there. */
export interface ClaimSummary {
  readonly key: string;
  readonly state: Claim['state'];
  readonly activityType: string;
  readonly workflowId: string | null;
  readonly attempt: number;
  readonly claimedBy: string;
  readonly claimedAt: Date;
  readonly ownerAlive: boolean;
}

export interface PruneSummary {
  readonly count: number;
  readonly oldestFinishedAt: Date | null;
  readonly newestFinishedAt: Date | null;
  readonly byActivityType: Readonly<Record<string, number>>;
}

export interface LedgerEntry {
  readonly key: string;
  readonly activityType: string;
  readonly workflowId: string | null;
  readonly attempt: number;
  readonly worker: string;
  readonly startedAt: Date;
  readonly finishedAt: Date | null;
  readonly outcome: string | null;
  readonly errorMessage: string | null;
}

export class ClaimOperations {
  private readonly claims: string;
  private readonly waiters: string;
  private readonly ledgerCalls: string;
  private readonly channel: string;

  constructor(
    private readonly pool: pg.Pool,
    readonly schema: string = DEFAULT_SCHEMA,
  ) {
    const quoted = quoteIdentifier('schema', schema);
    this.claims = `${quoted}.claims`;
    this.waiters = `${quoted}.waiters`;
    this.ledgerCalls = `${quoted}.ledger_calls`;
    this.channel = outcomeChannel(schema);
  }

  /** Claims without an outcome first (they are the ones that need a person), oldest first. */
  async list(filter: ListFilter): Promise<ClaimSummary[]> {
    const { rows } = await this.pool.query<ClaimSummary>(
      `
SELECT key, state, activity_type AS "activityType", workflow_id AS "workflowId", attempt,
  claimed_by AS "claimedBy", claimed_at AS "claimedAt", ${OWNER_ALIVE} AS "ownerAlive"
FROM ${this.claims}
WHERE ($1::text IS NULL OR state = $1 OR ($1 = 'open' AND state <> 'completed'))
  AND ($2::text IS NULL OR workflow_id = $2)
  AND ($3::text IS NULL OR activity_type = $3)
  AND ($4::float8 IS NULL OR claimed_at < now() - $4 * interval '1 millisecond')
ORDER BY state = 'completed', claimed_at
LIMIT $5`,
      [filter.state ?? null, filter.workflowId ?? null, filter.activityType ?? null, filter.olderThanMs ?? null, filter.limit],
    );
    return rows;
  }

  async show(key: string): Promise<Claim> {
    const { rows } = await this.pool.query<ClaimRow>(`SELECT ${CLAIM_READ} FROM ${this.claims} WHERE key = $1`, [key]);
    if (!rows[0]) throw new ClaimNotFoundError(key);
    return toClaim(rows[0]);
  }

  /** It happened, and this is what it returned: later attempts replay `result`. Returns the claim as it was. */
  async resolve(key: string, result: Payload, options: { force: boolean }): Promise<Claim> {
    return this.change(key, 'resolve', options.force, async (client, claim) => {
      const note = `resolved by an operator (was ${claim.state}${claim.outcomeNote ? `: ${claim.outcomeNote}` : ''})`;
      await client.query(
        `
UPDATE ${this.claims}
SET state = 'completed', result_payload = $2, finished_at = now(), outcome_note = $3
WHERE key = $1`,
        [key, payloadToJson(result), pgText(note)],
      );
    });
  }

  /** It did not happen: delete the claim, so the next attempt runs the activity for real. Returns the claim as it was. */
  async release(key: string, options: { force: boolean }): Promise<Claim> {
    return this.change(key, 'release', options.force, async (client) => {
      await client.query(`DELETE FROM ${this.claims} WHERE key = $1`, [key]);
    });
  }

  /**
   * What a workflow waiting on `key` in `resumable()` will find when called again: the recorded
   * result (`resolved`) or no claim (`released`). Refused while the claim has no outcome yet.
   */
  async outcomeFor(key: string): Promise<'resolved' | 'released'> {
    const { rows } = await this.pool.query<ClaimRow>(`SELECT ${CLAIM_READ} FROM ${this.claims} WHERE key = $1`, [key]);
    if (!rows[0]) return 'released';
    const claim = toClaim(rows[0]);
    if (claim.state === 'completed') return 'resolved';
    throw new ClaimChangeRefusedError(
      'no-outcome',
      claim,
      `Key ${key} has no outcome on record yet (${claim.state}); a resumed call would be refused again. ` +
        `Check the vendor, then \`resolve\` or \`release\` it.`,
    );
  }

  /** Every workflow to tell about a decision on `key`: the claim's own and every one refused on it. */
  async waitersOf(key: string, claim?: Pick<Claim, 'namespace' | 'workflowId' | 'runId' | 'activityType'>): Promise<Waiter[]> {
    const { rows } = await this.pool.query<Waiter>(
      `
SELECT key, namespace, workflow_id AS "workflowId", run_id AS "runId", activity_type AS "activityType"
FROM ${this.waiters}
WHERE key = $1
ORDER BY refused_at`,
      [key],
    );
    const own: Waiter[] = claim?.workflowId
      ? [{ key, namespace: claim.namespace, workflowId: claim.workflowId, runId: claim.runId, activityType: claim.activityType }]
      : [];
    const seen = new Set<string>();
    return [...own, ...rows].filter((waiter) => {
      const id = `${waiter.namespace}\u0000${waiter.workflowId}`;
      return seen.has(id) ? false : (seen.add(id), true);
    });
  }

  /** Forgets a waiter once it has been told. */
  async forgetWaiter(waiter: Pick<Waiter, 'key' | 'namespace' | 'workflowId'>): Promise<void> {
    await this.pool.query(`DELETE FROM ${this.waiters} WHERE key = $1 AND namespace = $2 AND workflow_id = $3`, [
      waiter.key,
      waiter.namespace,
      waiter.workflowId,
    ]);
  }

  /** What `prune(olderThanMs)` would delete: completed claims finished before the cutoff, never an open one. */
  async pruneSummary(olderThanMs: number): Promise<PruneSummary> {
    const { rows } = await this.pool.query<{ activity_type: string; count: number; oldest: Date; newest: Date }>(
      `
SELECT activity_type, count(*)::integer AS count, min(finished_at) AS oldest, max(finished_at) AS newest
FROM ${this.claims}
WHERE state = 'completed' AND finished_at < now() - $1::float8 * interval '1 millisecond'
GROUP BY activity_type
ORDER BY activity_type`,
      [olderThanMs],
    );
    return {
      count: rows.reduce((sum, row) => sum + row.count, 0),
      oldestFinishedAt: rows.reduce<Date | null>((min, row) => (min === null || row.oldest < min ? row.oldest : min), null),
      newestFinishedAt: rows.reduce<Date | null>((max, row) => (max === null || row.newest > max ? row.newest : max), null),
      byActivityType: Object.fromEntries(rows.map((row) => [row.activity_type, row.count])),
    };
  }

  /** Deletes completed claims finished before the cutoff (never one without an outcome); returns how many. */
  async prune(olderThanMs: number): Promise<number> {
    return inTransaction(this.pool, async (client) => {
      const { rowCount } = await client.query(
        `
DELETE FROM ${this.claims}
WHERE state = 'completed' AND finished_at < now() - $1::float8 * interval '1 millisecond'`,
        [olderThanMs],
      );
      // Waiters of keys that no longer have a claim, refused before the cutoff, wait for nothing.
      await client.query(
        `
DELETE FROM ${this.waiters} AS waiter
WHERE refused_at < now() - $1::float8 * interval '1 millisecond'
  AND NOT EXISTS (SELECT 1 FROM ${this.claims} AS claim WHERE claim.key = waiter.key)`,
        [olderThanMs],
      );
      return rowCount ?? 0;
    });
  }

  async ledger(filter: { key?: string | undefined; workflowId?: string | undefined; limit: number }): Promise<LedgerEntry[]> {
    const { rows } = await this.pool.query<LedgerEntry>(
      `
SELECT key, activity_type AS "activityType", workflow_id AS "workflowId", attempt, worker,
  started_at AS "startedAt", finished_at AS "finishedAt", outcome, error_message AS "errorMessage"
FROM ${this.ledgerCalls}
WHERE ($1::text IS NULL OR key = $1) AND ($2::text IS NULL OR workflow_id = $2)
ORDER BY started_at DESC
LIMIT $3`,
      [filter.key ?? null, filter.workflowId ?? null, filter.limit],
    );
    return rows;
  }

  /** Locks the claim, checks the change is allowed, applies it, and wakes attempts waiting on it. */
  private async change(
    key: string,
    action: 'resolve' | 'release',
    force: boolean,
    apply: (client: pg.PoolClient, claim: Claim) => Promise<void>,
  ): Promise<Claim> {
    return inTransaction(this.pool, async (client) => {
      const { rows } = await client.query<ClaimRow>(`SELECT ${CLAIM_READ} FROM ${this.claims} WHERE key = $1 FOR UPDATE`, [key]);
      if (!rows[0]) throw new ClaimNotFoundError(key);
      const claim = toClaim(rows[0]);
      const refusal = changeRefusal(claim, action, force);
      if (refusal) throw refusal;
      await apply(client, claim);
      await client.query('SELECT pg_notify($1, $2)', [this.channel, key]);
      return claim;
    });
  }
}
