/**
 * What an operator does to claims after a refusal: look, resolve, release,
 * prune. Every change runs in a transaction that first locks and checks the
 * claim, so a bad request changes nothing and says why.
 */
import type pg from 'pg';
import { defaultPayloadConverter } from '@temporalio/common';
import type { Payload } from '@temporalio/common';
import { quoteIdentifier } from '../store/identifiers.js';
import { outcomeChannel } from '../store/postgres-claim-store.js';
import { inTransaction } from '../store/transaction.js';
import type { ClaimRow } from '../store/claim-row.js';
import { payloadFromJson, payloadToJson } from '../store/payload-json.js';
import type { PayloadJson } from '../store/payload-json.js';
import { CliError, EXIT } from './errors.js';

export interface ListFilter {
  readonly state?: string | undefined;
  readonly workflowId?: string | undefined;
  readonly activityType?: string | undefined;
  readonly olderThanMs?: number | undefined;
  readonly limit: number;
}

const STATES = ['claimed', 'completed', 'unknown', 'open'];

export class ClaimAdmin {
  private readonly schema: string;
  private readonly channel: string;

  constructor(
    private readonly pool: pg.Pool,
    schema: string,
  ) {
    this.schema = quoteIdentifier('schema', schema);
    this.channel = outcomeChannel(schema);
  }

  /** Claims without an outcome first (they are the ones that need a person), oldest first. */
  async list(filter: ListFilter): Promise<ClaimRow[]> {
    if (filter.state !== undefined && !STATES.includes(filter.state)) {
      throw new CliError(`--state ${JSON.stringify(filter.state)} is not one of ${STATES.join(', ')}.`, EXIT.usage);
    }
    const { rows } = await this.pool.query<ClaimRow>(
      `
SELECT *, coalesce(lease_expires_at > now(), false) AS owner_alive
FROM ${this.schema}.claims
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

  async show(key: string): Promise<ClaimRow> {
    const { rows } = await this.pool.query<ClaimRow>(
      `
SELECT *, coalesce(lease_expires_at > now(), false) AS owner_alive
FROM ${this.schema}.claims
WHERE key = $1`,
      [key],
    );
    if (!rows[0]) throw notFound(key);
    return rows[0];
  }

  /** It happened, and this is what it returned: later attempts replay `result`. */
  async resolve(key: string, result: unknown, options: { force: boolean }): Promise<ClaimRow> {
    return this.change(key, options, 'resolve', async (client, claim) => {
      const note = `resolved by an operator (was ${claim.state}${claim.outcome_note ? `: ${claim.outcome_note}` : ''})`;
      const { rows } = await client.query<ClaimRow>(
        `
UPDATE ${this.schema}.claims
SET state = 'completed', result_payload = $2, finished_at = now(), outcome_note = $3
WHERE key = $1
RETURNING *, false AS owner_alive`,
        [key, payloadToJson(defaultPayloadConverter.toPayload(result)), note],
      );
      return rows[0]!;
    });
  }

  /** It did not happen: delete the claim, so the next attempt runs the activity for real. */
  async release(key: string, options: { force: boolean }): Promise<ClaimRow> {
    return this.change(key, options, 'release', async (client) => {
      const { rows } = await client.query<ClaimRow>(
        `
DELETE FROM ${this.schema}.claims
WHERE key = $1
RETURNING *, false AS owner_alive`,
        [key],
      );
      return rows[0]!;
    });
  }

  /** Deletes completed claims finished before the cutoff; never a claim without an outcome. */
  async prune(olderThanMs: number, options: { dryRun: boolean }): Promise<number> {
    const verb = options.dryRun ? 'SELECT key FROM' : 'DELETE FROM';
    const { rowCount } = await this.pool.query(
      `
${verb} ${this.schema}.claims
WHERE state = 'completed' AND finished_at < now() - $1 * interval '1 millisecond'`,
      [olderThanMs],
    );
    return rowCount ?? 0;
  }

  async ledger(filter: { key?: string | undefined; workflowId?: string | undefined; limit: number }): Promise<pg.QueryResultRow[]> {
    const { rows } = await this.pool.query(
      `
SELECT key, activity_type, workflow_id, attempt, worker, started_at, finished_at, outcome, error_message
FROM ${this.schema}.ledger_calls
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
    options: { force: boolean },
    action: 'resolve' | 'release',
    apply: (client: pg.PoolClient, claim: ClaimRow) => Promise<ClaimRow>,
  ): Promise<ClaimRow> {
    return inTransaction(this.pool, async (client) => {
      const { rows } = await client.query<ClaimRow>(
        `
SELECT *, coalesce(lease_expires_at > now(), false) AS owner_alive
FROM ${this.schema}.claims
WHERE key = $1
FOR UPDATE`,
        [key],
      );
      const claim = rows[0];
      if (!claim) throw notFound(key);
      assertChangeAllowed(claim, action, options.force);
      const changed = await apply(client, claim);
      await client.query('SELECT pg_notify($1, $2)', [this.channel, key]);
      return changed;
    });
  }
}

function assertChangeAllowed(claim: ClaimRow, action: 'resolve' | 'release', force: boolean): void {
  if (claim.state === 'completed') {
    throw new CliError(
      `Key ${claim.key} is already completed (${claim.activity_type}, finished ${claim.finished_at?.toISOString()}); ` +
        `refusing to ${action} it. Its recorded result is what later attempts return.`,
      EXIT.conflict,
    );
  }
  if (claim.state === 'claimed' && claim.owner_alive && !force) {
    throw new CliError(
      `Key ${claim.key} is held by attempt ${claim.attempt} on worker ${claim.claimed_by}, whose lease is live until ` +
        `${claim.lease_expires_at?.toISOString()}: its call may be in flight right now. Wait for it, or add --force ` +
        `if you know that worker is gone.`,
      EXIT.conflict,
    );
  }
}

function notFound(key: string): CliError {
  return new CliError(`No claim for key ${key}. \`temporal-idempotency list\` shows the claims there are.`, EXIT.notFound);
}

/** The recorded result, decoded with the default converter when it can be (not when a codec encrypted it). */
export function describeResult(payload: PayloadJson | null): unknown {
  if (!payload) return null;
  const decoded: Payload = payloadFromJson(payload);
  try {
    return defaultPayloadConverter.fromPayload(decoded);
  } catch {
    const encoding = Buffer.from(payload.metadata['encoding'] ?? '', 'base64').toString();
    return `<${encoding || 'unknown'} payload: decode it with the worker's codec>`;
  }
}
