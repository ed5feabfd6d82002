/**
 * What an operator does to claims after a refusal: look, resolve, release,
 * prune, read the ledger; and rotating the deployment secret, which
 * `KeyRotation` (key-rotation.ts) does for it. The CLI only parses, prints and
 * maps errors to exit codes; every statement lives in the store, beside the
 * ones the workers send. Every change runs in a transaction that first locks
 * and checks the claim, so a refused request changes nothing and says why.
 */
import type pg from 'pg';
import type { Payload } from '@temporalio/common';
import type { Claim, KeyFormatId, Waiter } from './claim-store.js';
import { CLAIM_READ, OWNER_ALIVE, toClaim } from './claim-row.js';
import type { ClaimRow } from './claim-row.js';
import { DEFAULT_SCHEMA, outcomeChannel, quoteIdentifier } from './identifiers.js';
import { ClaimChangeRefusedError, ClaimNotFoundError, SecretRequiredError, changeRefusal } from './operator-errors.js';
import { payloadFromJson, payloadToJson } from './payload-json.js';
import type { PayloadJson } from './payload-json.js';
import { UNKEYED, keyedFormat } from '../key/index.js';
import type { KeyFormat } from '../key/index.js';
import { pgText } from './pg-text.js';
import { inTransaction } from './transaction.js';
import { shareClaimAdmission } from './claim-admission-lock.js';
import { horizonMs, optionalBoolean } from './operation-inputs.js';
import { assertSchemaUsable } from './schema-version.js';
import { RecordAuthentication } from './record-authentication.js';
import type { TrustOptions } from './record-authentication.js';
import { recordOperatorAction } from './operator-trail.js';
import type { OperatorTrailEntry } from './operator-trail.js';
import { KeyRotation } from './key-rotation.js';
import type { ActivationOptions, ActivationReport, KeyStatus, RetirementOptions, RetirementReport } from './key-rotation.js';

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

/** A workflow, as claims record it: its namespace and id (any run). */
export interface WorkflowRef {
  readonly namespace: string;
  readonly workflowId: string;
}

/** A workflow whose completed claims are past a prune's horizon, and how many. */
export interface PruneCandidateWorkflow extends WorkflowRef {
  readonly claims: number;
}

/** Which completed claims a prune may delete, beside its horizon. */
export interface PruneScope {
  /**
   * The instant the horizon counts back from (default: the database's now()). A caller that checks
   * workflows before deleting passes one instant to both, so a claim that ages past the horizon in
   * between is not deleted unchecked.
   */
  readonly asOf?: Date | undefined;
  /** Claims of these workflows stay whatever their age: still running, or closed within the horizon. */
  readonly keepWorkflows?: readonly WorkflowRef[] | undefined;
}

export interface LedgerFilter {
  readonly key?: string | undefined;
  readonly workflowId?: string | undefined;
  readonly limit: number;
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

/** How many pruned keys a prune's operator-trail row lists (the count is always whole). */
const PRUNE_TRAIL_KEYS = 1_000;

export class ClaimOperations {
  readonly schema: string;
  private readonly claims: string;
  private readonly waiters: string;
  private readonly ledgerCalls: string;
  private readonly operatorTrail: string;
  private readonly settings: string;
  private readonly workers: string;
  private readonly channel: string;
  private readonly authentication: RecordAuthentication;
  private readonly quotedSchema: string;
  private readonly rotation: KeyRotation;
  private schemaChecked: Promise<void> | undefined;

  constructor(
    private readonly pool: pg.Pool,
    options: ClaimOperationsOptions = {},
  ) {
    this.schema = options.schema ?? DEFAULT_SCHEMA;
    const quoted = quoteIdentifier('schema', this.schema);
    this.quotedSchema = quoted;
    this.claims = `${quoted}.claims`;
    this.waiters = `${quoted}.waiters`;
    this.ledgerCalls = `${quoted}.ledger_calls`;
    this.operatorTrail = `${quoted}.operator_actions`;
    this.settings = `${quoted}.settings`;
    this.workers = `${quoted}.workers`;
    this.channel = outcomeChannel(this.schema);
    this.authentication = new RecordAuthentication(options);
    this.rotation = new KeyRotation({
      pool,
      schema: this.schema,
      claims: this.claims,
      settings: this.settings,
      workers: this.workers,
      authentication: this.authentication,
      schemaReady: () => this.schemaReady(),
      keyFormatInForce: (client) => this.keyFormatInForce(client),
      recordAction: (client, entry) => this.recordAction(client, entry),
    });
  }

  /** Claims without an outcome first (they are the ones that need a person), oldest first. */
  async list(filter: ListFilter): Promise<ClaimSummary[]> {
    const claims: ClaimSummary[] = [];
    for await (const page of this.listPages(filter)) claims.push(...page);
    return claims;
  }

  /**
   * `list`, a page at a time from one server-side cursor (one scan, one snapshot), so a caller
   * that prints as it goes holds one page, however large the limit.
   */
  async *listPages(filter: ListFilter, pageSize = 1_000): AsyncGenerator<ClaimSummary[]> {
    yield* this.cursorPages<ClaimSummary>(
      `
SELECT key, state, activity_type AS "activityType", workflow_id AS "workflowId", attempt,
  claimed_by AS "claimedBy", claimed_at AS "claimedAt", ${OWNER_ALIVE} AS "ownerAlive"
FROM ${this.claims}
WHERE ($1::text IS NULL OR state = $1 OR ($1 = 'open' AND state <> 'completed'))
  AND ($2::text IS NULL OR workflow_id = $2)
  AND ($3::text IS NULL OR activity_type = $3)
  AND ($4::float8 IS NULL OR claimed_at < now() - $4 * interval '1 millisecond')
ORDER BY state = 'completed', claimed_at, key
LIMIT $5`,
      [filter.state ?? null, filter.workflowId ?? null, filter.activityType ?? null, filter.olderThanMs ?? null, filter.limit],
      pageSize,
    );
  }

  async show(key: string): Promise<Claim> {
    await this.schemaReady();
    const { rows } = await this.pool.query<ClaimRow>(`SELECT ${CLAIM_READ} FROM ${this.claims} WHERE key = $1`, [key]);
    if (!rows[0]) throw new ClaimNotFoundError(key);
    return toClaim(rows[0], this.authentication, await this.keyFormatInForce());
  }

  /** The arguments recorded with the claim (encoded like its result); null when none were. */
  async recordedArguments(key: string): Promise<Payload | null> {
    await this.schemaReady();
    const { rows } = await this.pool.query<{ call_arguments: PayloadJson | null }>(`SELECT call_arguments FROM ${this.claims} WHERE key = $1`, [key]);
    if (!rows[0]) throw new ClaimNotFoundError(key);
    return rows[0].call_arguments ? payloadFromJson(rows[0].call_arguments) : null;
  }

  /**
   * Whether `argsText` (recorded arguments, decoded) is what the claim's fingerprint was made from:
   * arguments that were swapped in the table do not match. `unknown` when the claim's key format
   * needs a secret the CLI was not given.
   *
   * A keyed claim's row names the secret that last signed it, which is not always the one that keyed
   * it (an activation or a retirement signs rows anew): every secret the CLI knows is tried.
   */
  argumentsMatch(claim: Claim, argsText: string): boolean | 'unknown' {
    if (claim.keyFormat.version === 1) return UNKEYED.fingerprint(argsText) === claim.fingerprint;
    const known = this.authentication.secretIds.map((id) => this.keyedFormatOf(id)!);
    if (known.some((format) => format.fingerprint(argsText) === claim.fingerprint)) return true;
    return this.keyedFormatOf(claim.keyFormat.secretId) ? false : 'unknown';
  }

  private keyedFormatOf(secretId: string | null): KeyFormat | undefined {
    const secret = secretId === null ? undefined : this.authentication.secret(secretId);
    return secret ? keyedFormat(secret) : undefined;
  }

  /** The key format every new claim is keyed in, and which secret keys it. */
  async keyFormatInForce(client: pg.ClientBase | pg.Pool = this.pool): Promise<KeyFormatId> {
    await this.schemaReady();
    const { rows } = await client.query<{ key_format: 1 | 2; secret_id: string | null; retired_secret_ids: string[] }>(
      `SELECT key_format, secret_id, retired_secret_ids FROM ${this.settings}`,
    );
    return { version: rows[0]?.key_format ?? 1, secretId: rows[0]?.secret_id ?? null, retiredSecretIds: rows[0]?.retired_secret_ids ?? [] };
  }

  /**
   * It happened, and this is what it returned (encoded as the workers encode results): later attempts
   * replay `result`. Signed when the deployment signs its records. Returns the claim as it was.
   */
  async resolve(key: string, result: Payload, options: ChangeOptions): Promise<Claim> {
    return this.change(key, 'resolve', options, async (client, claim, inForce) => {
      const json = payloadToJson(result);
      const note = pgText(`resolved by an operator (was ${claim.state}${claim.outcomeNote ? `: ${claim.outcomeNote}` : ''})`);
      const { mac, secretId } = this.authentication.sign(
        { ...claim, state: 'completed', result: json, outcomeNote: note, outcomeDetail: null },
        inForce,
      );
      await client.query(
        `
UPDATE ${this.claims}
SET state = 'completed', result_payload = $2, finished_at = now(), outcome_note = $3, outcome_detail = NULL,
  record_mac = $4, secret_id = $5
WHERE key = $1`,
        [key, json, note, mac, secretId],
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

  /** The operator trail of `key`, oldest first: its own entries and the prunes that list it. */
  async operatorActions(key: string): Promise<OperatorAction[]> {
    await this.schemaReady();
    const { rows } = await this.pool.query<OperatorAction>(
      `
SELECT at, database_user AS "databaseUser", action, key, reason, forced, before_state AS before, after_state AS after
FROM ${this.operatorTrail}
WHERE key = $1 OR (action = 'prune' AND key IS NULL AND after_state -> 'keys' ? $1)
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
    await this.schemaReady();
    const { rows } = await this.pool.query<ClaimRow>(`SELECT ${CLAIM_READ} FROM ${this.claims} WHERE key = $1`, [key]);
    if (!rows[0]) {
      // No claim is "released" only if an operator released it. A row deleted any other way (by hand,
      // by a writer of the table) says nothing about the vendor: calling again could repeat the call.
      const { rows: released } = await this.pool.query(
        `SELECT 1 FROM ${this.operatorTrail} WHERE key = $1 AND action = 'release' LIMIT 1`,
        [key],
      );
      if (released.length > 0) return 'released';
      throw new ClaimNotFoundError(
        key,
        'and no release of it is on the operator trail: the row was deleted outside the CLI, or pruned. A resumed ' +
          'call would run for real. Check the vendor; if it did not happen, `temporal-idempotency release-absent ' +
          `${key} --reason …\` records that, and \`resume\` then lets the workflow call again.`,
      );
    }
    const claim = toClaim(rows[0], this.authentication, await this.keyFormatInForce());
    if (claim.authenticity === 'rejected') {
      throw new ClaimChangeRefusedError('not-authentic', claim, `Key ${key}'s record does not authenticate: see SECURITY.md before resuming anything.`);
    }
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
    await this.schemaReady();
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
    await this.schemaReady();
    await this.pool.query(
      `UPDATE ${this.waiters} SET signalled_at = now() WHERE key = $1 AND namespace = $2 AND workflow_id = $3`,
      [waiter.key, waiter.namespace, waiter.workflowId],
    );
  }

  /** Forgets a waiter whose workflow is closed: nothing waits there any more. */
  async forgetWaiter(waiter: Pick<Waiter, 'key' | 'namespace' | 'workflowId'>): Promise<void> {
    await this.schemaReady();
    await this.pool.query(`DELETE FROM ${this.waiters} WHERE key = $1 AND namespace = $2 AND workflow_id = $3`, [
      waiter.key,
      waiter.namespace,
      waiter.workflowId,
    ]);
  }

  /**
   * SQL: the completed claims past the horizon that nobody may still need. `$1` is the horizon in
   * ms, `$2` the instant it counts back from (null: now()), `$3`/`$4` the namespaces and ids of
   * workflows whose claims stay. A waiter that was never told of a decision (its signal failed), or
   * told within the horizon, may still call again and must find the record.
   */
  private prunable(claims: string): string {
    const cutoff = `(coalesce($2::timestamptz, now()) - $1::float8 * interval '1 millisecond')`;
    return `${claims}.state = 'completed' AND ${claims}.finished_at < ${cutoff}
  AND NOT EXISTS (
    SELECT 1 FROM ${this.waiters} AS waiter
    WHERE waiter.key = ${claims}.key AND (waiter.signalled_at IS NULL OR waiter.signalled_at >= ${cutoff}))
  AND NOT EXISTS (
    SELECT 1 FROM unnest($3::text[], $4::text[]) AS kept(namespace, workflow_id)
    WHERE kept.namespace = ${claims}.namespace AND kept.workflow_id = ${claims}.workflow_id)`;
  }

  private prunableValues(olderThanMs: number, scope: PruneScope): unknown[] {
    const kept = scope.keepWorkflows ?? [];
    return [olderThanMs, scope.asOf ?? null, kept.map((ref) => ref.namespace), kept.map((ref) => ref.workflowId)];
  }

  /** The database's clock: the instant to measure a prune's horizon from (`PruneScope.asOf`). */
  async databaseNow(): Promise<Date> {
    await this.schemaReady();
    const { rows } = await this.pool.query<{ now: Date }>('SELECT now() AS now');
    return rows[0]!.now;
  }

  /** The namespaces completed claims were made in: whose retention decides how long they must stay. */
  async completedClaimNamespaces(): Promise<string[]> {
    await this.schemaReady();
    const { rows } = await this.pool.query<{ namespace: string }>(
      `SELECT DISTINCT namespace FROM ${this.claims} WHERE state = 'completed' ORDER BY namespace`,
    );
    return rows.map((row) => row.namespace);
  }

  /**
   * The workflows whose completed claims `prune(olderThanMs, scope)` would delete, with how many
   * each: for a caller to ask Temporal which of them may still need their records.
   */
  async *pruneCandidateWorkflows(olderThanMs: number, scope: PruneScope = {}, pageSize = 1_000): AsyncGenerator<PruneCandidateWorkflow[]> {
    yield* this.cursorPages<PruneCandidateWorkflow>(
      `
SELECT namespace, workflow_id AS "workflowId", count(*)::integer AS claims
FROM ${this.claims} AS claims
WHERE claims.workflow_id IS NOT NULL AND ${this.prunable('claims')}
GROUP BY namespace, workflow_id
ORDER BY namespace, workflow_id`,
      this.prunableValues(olderThanMs, scope),
      pageSize,
    );
  }

  /**
   * Deletes (or with `dryRun`, counts) the ledger entries of calls whose last entry is older than
   * the horizon, through the schema owner's `prune_ledger` (the ledger is append-only for every
   * other role): never a call under a day old, nor one whose key still has a claim without an
   * outcome. Appends to the operator trail. Returns the entries.
   */
  async pruneLedger(olderThanMs: number, options: { reason?: string | undefined; dryRun?: boolean } = {}): Promise<number> {
    horizonMs('olderThanMs', olderThanMs);
    optionalBoolean('dryRun', options.dryRun);
    await this.schemaReady();
    const { rows } = await this.pool.query<{ pruned: string }>(
      `SELECT ${this.quotedSchema}.prune_ledger($1::float8 * interval '1 millisecond', $2, $3) AS pruned`,
      [olderThanMs, options.reason ?? null, options.dryRun ?? false],
    );
    return Number(rows[0]?.pruned ?? 0);
  }

  /** What `prune(olderThanMs, scope)` would delete: completed claims finished before the cutoff that nobody may still need. */
  async pruneSummary(olderThanMs: number, scope: PruneScope = {}): Promise<PruneSummary> {
    horizonMs('olderThanMs', olderThanMs);
    await this.schemaReady();
    const { rows } = await this.pool.query<{ activity_type: string; count: number; oldest: Date; newest: Date }>(
      `
SELECT activity_type, count(*)::integer AS count, min(finished_at) AS oldest, max(finished_at) AS newest
FROM ${this.claims} AS claims
WHERE ${this.prunable('claims')}
GROUP BY activity_type
ORDER BY activity_type`,
      this.prunableValues(olderThanMs, scope),
    );
    return {
      count: rows.reduce((sum, row) => sum + row.count, 0),
      oldestFinishedAt: rows.reduce<Date | null>((min, row) => (min === null || row.oldest < min ? row.oldest : min), null),
      newestFinishedAt: rows.reduce<Date | null>((max, row) => (max === null || row.newest > max ? row.newest : max), null),
      byActivityType: Object.fromEntries(rows.map((row) => [row.activity_type, row.count])),
    };
  }

  /**
   * Deletes completed claims finished before the cutoff; never one without an outcome, one a
   * waiting workflow may still need, nor one of `scope.keepWorkflows`. Returns how many.
   */
  async prune(olderThanMs: number, options: PruneScope & { reason?: string | undefined; forced?: boolean } = {}): Promise<number> {
    horizonMs('olderThanMs', olderThanMs);
    await this.schemaReady();
    return inTransaction(this.pool, async (client) => {
      // The trail names what went (the first keys, in order), so a later "why was this call made again?" finds it.
      const { rows } = await client.query<{ count: number; keys: string[] | null }>(
        `
WITH pruned AS (
  DELETE FROM ${this.claims} AS claims
  WHERE ${this.prunable('claims')}
  RETURNING claims.key
)
SELECT count(*)::integer AS count, (array_agg(key ORDER BY key))[1:${PRUNE_TRAIL_KEYS}] AS keys
FROM pruned`,
        this.prunableValues(olderThanMs, options),
      );
      const rowCount = rows[0]?.count ?? 0;
      const keys = rows[0]?.keys ?? [];
      // Waiters told of a decision before the cutoff, whose key has no claim left, wait for nothing here.
      await client.query(
        `
DELETE FROM ${this.waiters} AS waiter
WHERE signalled_at < coalesce($2::timestamptz, now()) - $1::float8 * interval '1 millisecond'
  AND NOT EXISTS (SELECT 1 FROM ${this.claims} AS claim WHERE claim.key = waiter.key)`,
        [olderThanMs, options.asOf ?? null],
      );
      await this.recordAction(client, {
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

  async ledger(filter: LedgerFilter): Promise<LedgerEntry[]> {
    const entries: LedgerEntry[] = [];
    for await (const page of this.ledgerPages(filter)) entries.push(...page);
    return entries;
  }

  /** `ledger`, a page at a time from one server-side cursor, as `listPages`. */
  async *ledgerPages(filter: LedgerFilter, pageSize = 1_000): AsyncGenerator<LedgerEntry[]> {
    yield* this.cursorPages<LedgerEntry>(
      `
SELECT key, activity_type AS "activityType", workflow_id AS "workflowId", attempt, worker,
  started_at AS "startedAt", finished_at AS "finishedAt", outcome, error_message AS "errorMessage"
FROM ${this.ledgerCalls}
WHERE ($1::text IS NULL OR key = $1) AND ($2::text IS NULL OR workflow_id = $2)
ORDER BY started_at DESC
LIMIT $3`,
      [filter.key ?? null, filter.workflowId ?? null, filter.limit],
      pageSize,
    );
  }

  /**
   * Runs `query` behind a cursor in a read-only transaction and yields its rows `pageSize` at a time.
   * Leaving the loop early closes the cursor (the transaction ends either way).
   */
  private async *cursorPages<R extends pg.QueryResultRow>(query: string, values: unknown[], pageSize: number): AsyncGenerator<R[]> {
    await this.schemaReady();
    const client = await this.pool.connect();
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

  /**
   * Locks the claim, checks the change is allowed, applies it, records who did it and why, and wakes
   * attempts waiting on it.
   */
  private async change(
    key: string,
    action: 'resolve' | 'release',
    options: ChangeOptions,
    apply: (client: pg.PoolClient, claim: Claim, inForce: KeyFormatId) => Promise<{ state: string }>,
  ): Promise<Claim> {
    await this.schemaReady();
    return inTransaction(this.pool, async (client) => {
      // The format read here signs the change: no keys activate or retire may commit before the change does.
      await shareClaimAdmission(client, this.schema);
      const inForce = await this.keyFormatInForce(client);
      const { rows } = await client.query<ClaimRow>(`SELECT ${CLAIM_READ} FROM ${this.claims} WHERE key = $1 FOR UPDATE`, [key]);
      if (!rows[0]) throw new ClaimNotFoundError(key);
      const claim = toClaim(rows[0], this.authentication, inForce);
      const refusal = changeRefusal(claim, action, options.force);
      if (refusal) throw refusal;
      if (action === 'resolve' && inForce.secretId !== null && !this.authentication.secret(inForce.secretId)) {
        throw new SecretRequiredError(
          `This deployment's workers refuse records not signed with its secret (${inForce.secretId}). Give the CLI the ` +
            `same secret (TEMPORAL_IDEMPOTENCY_SECRET, or secret in --worker-config). Nothing was changed.`,
        );
      }
      // Resolving signs the row, fingerprint and all: never over a record that does not authenticate
      // (forged, or read with the wrong secret), unless the operator says they know.
      if (action === 'resolve' && claim.authenticity === 'rejected' && !options.force) {
        throw new ClaimChangeRefusedError(
          'not-authentic',
          claim,
          `Key ${key}'s record does not authenticate under the secrets the CLI was given: it was written without ` +
            `them (see SECURITY.md), or the CLI has the wrong secret. Nothing was changed; --force signs it anyway.`,
        );
      }
      const after = await apply(client, claim, inForce);
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

  /**
   * It did not happen, for a key with no claim left (deleted outside the CLI): records the release on
   * the operator trail, so `resume` may tell waiting workflows to call again.
   */
  async releaseAbsent(key: string, options: { reason?: string | undefined }): Promise<void> {
    await this.schemaReady();
    await inTransaction(this.pool, async (client) => {
      const { rows } = await client.query(`SELECT 1 FROM ${this.claims} WHERE key = $1 FOR UPDATE`, [key]);
      if (rows.length > 0) {
        throw new ClaimChangeRefusedError('has-claim', undefined, `Key ${key} has a claim: use \`release\`, which checks it.`);
      }
      await this.recordAction(client, { action: 'release', key, reason: options.reason, forced: true, before: { state: 'absent' }, after: { state: 'released' } });
    });
  }

  /** Which key format is in force, and how many rows are not signed by its secret (what an activation would sign). */
  keyStatus(): Promise<KeyStatus> {
    return this.rotation.keyStatus();
  }

  /**
   * Puts the CLI's secret in force: every worker derives keys with it and signs with it from now on,
   * and refuses rows it did not sign. Run it once every worker has the secret (as \`secret\`, with the
   * one it replaces in \`previousSecrets\`). It first signs every row that authenticates under the
   * secrets the CLI knows, or is unsigned (the rows from before any secret: trusted as of now); a row
   * whose MAC fails is left as it is, and counted: it stays refused. Then, holding the lock every
   * claim takes, it signs what came meanwhile and switches the format, so no claim in the earlier
   * format can appear after it.
   *
   * After a leak, name the leaked secret(s) in `compromised`: rows they signed are not signed again
   * (whoever holds a leaked secret can plant a row that authenticates under it, a receipt for a charge
   * not yet made), and they are retired in the same transaction, so every such row is refused from
   * the switch on, genuine ones too: a person checks them.
   */
  activateSecret(options: ActivationOptions = {}): Promise<ActivationReport> {
    return this.rotation.activateSecret(options);
  }

  /**
   * Takes a secret's authority away after a rotation (`keys activate` put another in force): rows it
   * signed that still authenticate are signed again with the secret in force, then it is recorded as
   * retired, under the lock every claim takes, and from then on every row it signs is refused, though
   * workers keep it to find claims under their old keys. Run it once no attempt that began before the
   * activation can still be running (they sign their outcome with the secret they began under).
   */
  retireSecret(secretId: string, options: RetirementOptions = {}): Promise<RetirementReport> {
    return this.rotation.retireSecret(secretId, options);
  }

  /**
   * Once per instance, before the first statement: a schema this release cannot use (never
   * migrated, or migrated by a newer release) is reported by name, as the workers report it,
   * instead of as `relation "…" does not exist` from whichever statement came first.
   */
  private schemaReady(): Promise<void> {
    this.schemaChecked ??= assertSchemaUsable(this.pool, this.schema).then(() => undefined).catch((error: unknown) => {
      this.schemaChecked = undefined;
      throw error;
    });
    return this.schemaChecked;
  }

  private recordAction(client: pg.PoolClient, entry: OperatorTrailEntry): Promise<void> {
    return recordOperatorAction(client, this.operatorTrail, entry);
  }
}
