/**
 * The claim store on Postgres: one row per key, claimed with a primary-key
 * insert, so two callers can never both win, on one server or many.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Payload } from '@temporalio/common';
import type { BeginResult, Claim, ClaimRequest, ClaimStore, ClaimWatch, HeldClaim } from './claim-store.js';
import { ClaimListener } from './claim-listener.js';
import type { AuditLedger } from './audit-ledger.js';
import { PostgresAuditLedger } from './postgres-audit-ledger.js';
import { quoteIdentifier } from './identifiers.js';
import { DEFAULT_SCHEMA } from './migrate.js';
import { assertSchemaCurrent } from './schema-version.js';
import { payloadToJson } from './payload-json.js';
import { CLAIM_COLUMNS, toClaim } from './claim-row.js';
import type { ClaimRow } from './claim-row.js';
import { sha256Hex } from '../key/index.js';

export interface PostgresClaimStoreOptions {
  /** The pool the store queries through. It is the caller's: the store never ends it. */
  readonly pool: pg.Pool;
  /** Schema that `migrate()` created. Default `temporal_idempotency`. */
  readonly schema?: string;
  /**
   * Send the hot-path statements as named prepared statements. Default true. Turn off behind a
   * pooler that cannot carry them (PgBouncer in transaction mode before 1.21).
   */
  readonly preparedStatements?: boolean;
}


/** The NOTIFY channel that announces outcomes in a schema, truncated like any Postgres identifier. */
export function outcomeChannel(schema: string): string {
  return `temporal_idempotency_${schema}`.slice(0, 63);
}
const BEGIN_ATTEMPTS = 3;

export class PostgresClaimStore implements ClaimStore {
  readonly schema: string;
  private readonly pool: pg.Pool;
  private readonly table: string;
  /** NOTIFY channel for outcomes in this schema; truncated like any Postgres identifier. */
  private readonly channel: string;
  private readonly listener: ClaimListener;
  /** Null when prepared statements are off. */
  private readonly statementPrefix: string | null;
  private schemaChecked: Promise<void> | undefined;
  private ledger: PostgresAuditLedger | undefined;

  constructor(options: PostgresClaimStoreOptions) {
    if (options?.pool == null || typeof options.pool.query !== 'function') {
      throw new TypeError('PostgresClaimStore needs { pool }: a pg.Pool connected to the database migrate() prepared.');
    }
    this.pool = options.pool;
    this.schema = options.schema ?? DEFAULT_SCHEMA;
    this.table = `${quoteIdentifier('schema', this.schema)}.claims`;
    this.channel = outcomeChannel(this.schema);
    this.listener = new ClaimListener(this.pool, this.channel);
    this.statementPrefix = options.preparedStatements === false ? null : `ti_${sha256Hex(this.schema).slice(0, 12)}`;
  }

  async begin(request: ClaimRequest, leaseMs: number): Promise<BeginResult> {
    await this.checkSchemaOnce();
    // A claim can be released between our failed insert and our read; then we simply try again.
    for (let attempt = 1; attempt <= BEGIN_ATTEMPTS; attempt++) {
      const inserted = await this.insertOrUndo(request, leaseMs);
      if (inserted) return { won: true, claim: inserted };
      // A separate statement, not a CTE: only a new snapshot sees a row a concurrent caller just committed.
      const existing = await this.get(request.key);
      if (existing) return { won: false, claim: existing };
    }
    throw new Error(`Key ${request.key} was claimed and released ${BEGIN_ATTEMPTS} times while we tried to claim it.`);
  }

  async get(key: string): Promise<Claim | null> {
    const { rows } = await this.query<ClaimRow>(
      'get',
      `
SELECT ${CLAIM_COLUMNS}, coalesce(lease_expires_at > now(), false) AS owner_alive
FROM ${this.table}
WHERE key = $1`,
      [key],
    );
    return rows[0] ? toClaim(rows[0]) : null;
  }

  async complete(key: string, token: string, result: Payload): Promise<boolean> {
    return this.settle(
      'complete',
      `
UPDATE ${this.table}
SET state = 'completed', result_payload = $4, finished_at = now()
WHERE key = $1 AND token = $2 AND state = 'claimed'
RETURNING key, awaited`,
      [key, token, this.channel, payloadToJson(result)],
    );
  }

  async release(key: string, token: string): Promise<boolean> {
    return this.settle(
      'release',
      `
DELETE FROM ${this.table}
WHERE key = $1 AND token = $2 AND state = 'claimed'
RETURNING key, awaited`,
      [key, token, this.channel],
    );
  }

  async markUnknown(key: string, token: string, note: string): Promise<boolean> {
    return this.settle(
      'mark_unknown',
      `
UPDATE ${this.table}
SET state = 'unknown', outcome_note = $4, finished_at = now()
WHERE key = $1 AND token = $2 AND state = 'claimed'
RETURNING key, awaited`,
      [key, token, this.channel, note],
    );
  }

  async takeOver(orphan: Claim, request: ClaimRequest, leaseMs: number): Promise<Claim | null> {
    const { rows } = await this.pool.query<ClaimRow>(
      `
UPDATE ${this.table}
SET token = $3, state = 'claimed', attempt = $4, claimed_by = $5, claimed_at = now(),
  lease_expires_at = now() + $6 * interval '1 millisecond', finished_at = NULL, outcome_note = NULL
WHERE key = $1 AND token = $2
  AND (state = 'unknown' OR (state = 'claimed' AND coalesce(lease_expires_at <= now(), true)))
RETURNING ${CLAIM_COLUMNS}, true AS owner_alive`,
      [orphan.key, orphan.token, randomUUID(), request.attempt, request.claimedBy, leaseMs],
    );
    return rows[0] ? toClaim(rows[0]) : null;
  }

  auditLedger(): AuditLedger {
    return (this.ledger ??= new PostgresAuditLedger(this.pool, this.schema));
  }

  async renewLeases(claims: readonly HeldClaim[], leaseMs: number): Promise<number> {
    if (claims.length === 0) return 0;
    const { rowCount } = await this.query(
      'renew',
      `
UPDATE ${this.table} AS claim
SET lease_expires_at = now() + $3 * interval '1 millisecond'
FROM unnest($1::text[], $2::uuid[]) AS held (key, token)
WHERE claim.key = held.key AND claim.token = held.token AND claim.state = 'claimed'`,
      [claims.map((claim) => claim.key), claims.map((claim) => claim.token), leaseMs],
    );
    return rowCount ?? 0;
  }

  async watch(key: string): Promise<ClaimWatch> {
    const follow = await this.listener.follow(key);
    let marked = false;
    return {
      current: () => {
        if (marked) return this.get(key);
        marked = true; // the first read also flags the claim as awaited, so that its outcome is announced
        return this.markAwaited(key);
      },
      changed: follow.changed,
      close: follow.close,
    };
  }

  /** Runs a statement that settles the caller's own claim and, if someone waits for it, wakes them. */
  private async settle(name: string, statement: string, params: unknown[]): Promise<boolean> {
    // The CASE only runs pg_notify for a claim someone waits on: NOTIFY serializes commits.
    const { rowCount } = await this.query(
      name,
      `
WITH settled AS (${statement})
SELECT CASE WHEN awaited THEN pg_notify($3, key) END
FROM settled`,
      params,
    );
    return rowCount === 1;
  }

  /** Reads the claim and flags it as awaited, so that its outcome is announced. */
  private async markAwaited(key: string): Promise<Claim | null> {
    const { rows } = await this.pool.query<ClaimRow>(
      `
UPDATE ${this.table}
SET awaited = true
WHERE key = $1
RETURNING ${CLAIM_COLUMNS}, coalesce(lease_expires_at > now(), false) AS owner_alive`,
      [key],
    );
    return rows[0] ? toClaim(rows[0]) : null;
  }

  /**
   * The caller is told the claim failed, so it will not call; but the INSERT may have committed
   * before the connection dropped. Undo it by token, or a later attempt would refuse a call
   * that never happened. If Postgres is gone entirely the undo fails too, and the claim's
   * lapsed lease makes later attempts refuse: safe, if not ideal.
   */
  private async insertOrUndo(request: ClaimRequest, leaseMs: number): Promise<Claim | null> {
    const token = randomUUID();
    try {
      return await this.insertClaim(request, token, leaseMs);
    } catch (error) {
      await this.release(request.key, token).catch(() => undefined);
      throw error;
    }
  }

  private async insertClaim(request: ClaimRequest, token: string, leaseMs: number): Promise<Claim | null> {
    const { rows } = await this.query<ClaimRow>(
      'claim',
      `
INSERT INTO ${this.table}
  (key, state, token, fingerprint, namespace, activity_type, workflow_id, run_id, activity_id, attempt, claimed_by,
   lease_expires_at)
VALUES ($1, 'claimed', $2, $3, $4, $5, $6, $7, $8, $9, $10, now() + $11 * interval '1 millisecond')
ON CONFLICT (key) DO NOTHING
RETURNING ${CLAIM_COLUMNS}, true AS owner_alive`,
      [
        request.key,
        token,
        request.fingerprint,
        request.namespace,
        request.activityType,
        request.workflowId,
        request.runId,
        request.activityId,
        request.attempt,
        request.claimedBy,
        leaseMs,
      ],
    );
    return rows[0] ? toClaim(rows[0]) : null;
  }

  /**
   * Runs a statement by name, so each connection parses and plans it once (about a third less
   * Postgres CPU per claim than sending the text each time). Names carry the schema's hash, so
   * two stores on one pool never share one.
   */
  private query<R extends pg.QueryResultRow>(name: string, text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    return this.pool.query<R>(this.statementPrefix ? { name: `${this.statementPrefix}_${name}`, text, values } : { text, values });
  }

  /** Once per store, so a missing or outdated schema is reported by name rather than as a failed insert. */
  private checkSchemaOnce(): Promise<void> {
    this.schemaChecked ??= assertSchemaCurrent(this.pool, this.schema).catch((error: unknown) => {
      this.schemaChecked = undefined; // unreachable now may be reachable later
      throw error;
    });
    return this.schemaChecked;
  }
}
