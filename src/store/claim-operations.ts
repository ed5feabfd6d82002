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
import { RecordAuthentication } from './record-authentication.js';
import type { TrustOptions } from './record-authentication.js';
import { IdempotencyError } from '../errors.js';

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

export interface ClaimOperationsOptions extends TrustOptions {
  /** Schema that `migrate()` created. Default `temporal_idempotency`. */
  readonly schema?: string | undefined;
}

/** Why and how forcefully an operator changes a claim, for the operator trail. */
export interface ChangeOptions {
  readonly force: boolean;
  readonly reason?: string | undefined;
}

/** One entry of the operator trail: who changed which claim, when, why, from what to what. */
export interface OperatorAction {
  readonly at: Date;
  readonly databaseUser: string;
  readonly action: string;
  readonly key: string | null;
  readonly reason: string | null;
  readonly forced: boolean;
  readonly before: unknown;
  readonly after: unknown;
}

/** Raised when a record would be written unsigned into a deployment whose workers require signatures. */
export class SecretRequiredError extends IdempotencyError {
  override readonly name = 'SecretRequiredError';
  readonly code = 'secret-required';
}

export class ClaimOperations {
  readonly schema: string;
  private readonly claims: string;
  private readonly waiters: string;
  private readonly ledgerCalls: string;
  private readonly operatorTrail: string;
  private readonly channel: string;
  private readonly authentication: RecordAuthentication;

  constructor(
    private readonly pool: pg.Pool,
    options: ClaimOperationsOptions = {},
  ) {
    this.schema = options.schema ?? DEFAULT_SCHEMA;
    const quoted = quoteIdentifier('schema', this.schema);
    this.claims = `${quoted}.claims`;
    this.waiters = `${quoted}.waiters`;
    this.ledgerCalls = `${quoted}.ledger_calls`;
    this.operatorTrail = `${quoted}.operator_actions`;
    this.channel = outcomeChannel(this.schema);
    this.authentication = new RecordAuthentication(options);
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
    return toClaim(rows[0], this.authentication);
  }

  /**
   * It happened, and this is what it returned (encoded as the workers encode results): later attempts
   * replay `result`. Signed when the deployment signs its records. Returns the claim as it was.
   */
  async resolve(key: string, result: Payload, options: ChangeOptions): Promise<Claim> {
    return this.change(key, 'resolve', options, async (client, claim) => {
      const json = payloadToJson(result);
      const mac = this.authentication.sign({ namespace: claim.namespace, key, fingerprint: claim.fingerprint, state: 'completed', result: json });
      const note = `resolved by an operator (was ${claim.state}${claim.outcomeNote ? `: ${claim.outcomeNote}` : ''})`;
      await client.query(
        `
UPDATE ${this.claims}
SET state = 'completed', result_payload = $2, finished_at = now(), outcome_note = $3, record_mac = $4
WHERE key = $1`,
        [key, json, pgText(note), mac],
      );
      return { state: 'completed' };
    });
  }

  /** It did not happen: delete the claim, so the next attempt runs the activity for real. Returns the claim as it was. */
  async release(key: string, options: ChangeOptions): Promise<Claim> {
    return this.change(key, 'release', options, async (client) => {
      await client.query(`DELETE FROM ${this.claims} WHERE key = $1`, [key]);
      return { state: 'released' };
    });
  }

  /** The operator trail of `key`, oldest first. */
  async operatorActions(key: string): Promise<OperatorAction[]> {
    const { rows } = await this.pool.query<OperatorAction>(
      `
SELECT at, database_user AS "databaseUser", action, key, reason, forced, before_state AS before, after_state AS after
FROM ${this.operatorTrail}
WHERE key = $1
ORDER BY id`,
      [key],
    );
    return rows;
  }

  /**
   * What a workflow waiting on `key` in `resumable()` will find when called again: the recorded
   * result (`resolved`) or no claim (`released`). Refused while the claim has no outcome yet.
   */
  async outcomeFor(key: string): Promise<'resolved' | 'released'> {
    const { rows } = await this.pool.query<ClaimRow>(`SELECT ${CLAIM_READ} FROM ${this.claims} WHERE key = $1`, [key]);
    if (!rows[0]) return 'released';
    const claim = toClaim(rows[0], this.authentication);
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

  /** Notes that a waiter was told of a decision; it stays, so `resume` reaches it again if it still waits. */
  async markSignalled(waiter: Pick<Waiter, 'key' | 'namespace' | 'workflowId'>): Promise<void> {
    await this.pool.query(
      `UPDATE ${this.waiters} SET signalled_at = now() WHERE key = $1 AND namespace = $2 AND workflow_id = $3`,
      [waiter.key, waiter.namespace, waiter.workflowId],
    );
  }

  /** Forgets a waiter whose workflow is closed: nothing waits there any more. */
  async forgetWaiter(waiter: Pick<Waiter, 'key' | 'namespace' | 'workflowId'>): Promise<void> {
    await this.pool.query(`DELETE FROM ${this.waiters} WHERE key = $1 AND namespace = $2 AND workflow_id = $3`, [
      waiter.key,
      waiter.namespace,
      waiter.workflowId,
    ]);
  }

  /**
   * SQL: no workflow may still need this record. A waiter that was never told of a decision (its
   * signal failed), or told within the horizon, may still call again and must find the record.
   */
  private noWaiterNeeds(claims: string): string {
    return `NOT EXISTS (
  SELECT 1 FROM ${this.waiters} AS waiter
  WHERE waiter.key = ${claims}.key
    AND (waiter.signalled_at IS NULL OR waiter.signalled_at >= now() - $1::float8 * interval '1 millisecond'))`;
  }

  /** What `prune(olderThanMs)` would delete: completed claims finished before the cutoff that nobody may still need. */
  async pruneSummary(olderThanMs: number): Promise<PruneSummary> {
    const { rows } = await this.pool.query<{ activity_type: string; count: number; oldest: Date; newest: Date }>(
      `
SELECT activity_type, count(*)::integer AS count, min(finished_at) AS oldest, max(finished_at) AS newest
FROM ${this.claims} AS claims
WHERE state = 'completed' AND finished_at < now() - $1::float8 * interval '1 millisecond'
  AND ${this.noWaiterNeeds('claims')}
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

  /**
   * Deletes completed claims finished before the cutoff; never one without an outcome, nor one a
   * waiting workflow may still need. Returns how many.
   */
  async prune(olderThanMs: number, options: { reason?: string | undefined } = {}): Promise<number> {
    return inTransaction(this.pool, async (client) => {
      const { rowCount } = await client.query(
        `
DELETE FROM ${this.claims} AS claims
WHERE state = 'completed' AND finished_at < now() - $1::float8 * interval '1 millisecond'
  AND ${this.noWaiterNeeds('claims')}`,
        [olderThanMs],
      );
      // Waiters told of a decision before the cutoff, whose key has no claim left, wait for nothing here.
      await client.query(
        `
DELETE FROM ${this.waiters} AS waiter
WHERE signalled_at < now() - $1::float8 * interval '1 millisecond'
  AND NOT EXISTS (SELECT 1 FROM ${this.claims} AS claim WHERE claim.key = waiter.key)`,
        [olderThanMs],
      );
      await this.recordAction(client, {
        action: 'prune',
        key: null,
        reason: options.reason,
        forced: false,
        before: { olderThanMs },
        after: { pruned: rowCount ?? 0 },
      });
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

  /**
   * Locks the claim, checks the change is allowed, applies it, records who did it and why, and wakes
   * attempts waiting on it.
   */
  private async change(
    key: string,
    action: 'resolve' | 'release',
    options: ChangeOptions,
    apply: (client: pg.PoolClient, claim: Claim) => Promise<{ state: string }>,
  ): Promise<Claim> {
    return inTransaction(this.pool, async (client) => {
      const { rows } = await client.query<ClaimRow>(`SELECT ${CLAIM_READ} FROM ${this.claims} WHERE key = $1 FOR UPDATE`, [key]);
      if (!rows[0]) throw new ClaimNotFoundError(key);
      const claim = toClaim(rows[0], this.authentication);
      const refusal = changeRefusal(claim, action, options.force);
      if (refusal) throw refusal;
      if (action === 'resolve' && rows[0].record_mac !== null && !this.authentication.signs) {
        throw new SecretRequiredError(
          `Key ${key}'s record is signed: this deployment's workers sign their records and would refuse an unsigned ` +
            `resolution. Give the CLI the same secret (TEMPORAL_IDEMPOTENCY_SECRET, or secret in --worker-config). Nothing was changed.`,
        );
      }
      const after = await apply(client, claim);
      await this.recordAction(client, {
        action,
        key,
        reason: options.reason,
        forced: options.force,
        before: { state: claim.state, attempt: claim.attempt, claimedBy: claim.claimedBy, ownerAlive: claim.ownerAlive },
        after,
      });
      await client.query('SELECT pg_notify($1, $2)', [this.channel, key]);
      return claim;
    });
  }

  private async recordAction(
    client: pg.PoolClient,
    entry: { action: string; key: string | null; reason: string | undefined; forced: boolean; before: unknown; after: unknown },
  ): Promise<void> {
    await client.query(
      `
INSERT INTO ${this.operatorTrail} (action, key, reason, forced, before_state, after_state)
VALUES ($1, $2, $3, $4, $5, $6)`,
      [entry.action, entry.key, entry.reason === undefined ? null : pgText(entry.reason), entry.forced, entry.before, entry.after],
    );
  }
}
