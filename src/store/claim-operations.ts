/**
 * What an operator does to claims after a refusal: look, resolve, release,
 * prune, read the ledger; and moving rows to a new record secret, which
 * record-resigning.ts does for it. The CLI only parses, prints and
 * maps errors to exit codes; every statement lives in the store, beside the
 * ones the workers send. Every change runs in a transaction that first locks
 * and checks the claim, so a refused request changes nothing and says why.
 */
import type pg from 'pg';
import type { Payload } from '@temporalio/common';
import type { Claim, Waiter } from './claim-store.js';
import { CLAIM_READ, OWNER_ALIVE, toClaim } from './claim-row.js';
import type { ClaimRow } from './claim-row.js';
import { DEFAULT_SCHEMA, outcomeChannel, quoteIdentifier } from './identifiers.js';
import { ClaimChangeRefusedError, ClaimNotFoundError, SecretRequiredError, changeRefusal } from './operator-errors.js';
import { payloadFromJson, payloadToJson } from './payload-json.js';
import type { PayloadJson } from './payload-json.js';
import { KeySalt } from '../key/index.js';
import { pgText } from './pg-text.js';
import { inTransaction } from './transaction.js';
import { batchSize, horizonMs, optionalBoolean } from './operation-inputs.js';
import { assertSchemaUsable } from './schema-version.js';
import { InvalidSecretError, RecordSigner, secretIds } from './record-signing.js';
import type { TrustOptions } from './record-signing.js';
import { recordOperatorAction } from './operator-trail.js';
import type { OperatorTrailEntry } from './operator-trail.js';
import { resignRecords, signerCounts } from './record-resigning.js';
import type { ResigningReport, SignerCount } from './record-resigning.js';
import { IdempotencyError, InvalidArgumentError } from '../errors.js';

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
  /** Secret ids (leaked) whose completed records may be replaced with --force: see `changeRefusal`. */
  readonly distrust?: readonly string[] | undefined;
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
/** The ledger keeps every call at least this long, whoever prunes it. */
const LEDGER_FLOOR_MS = 24 * 60 * 60_000;

/** Raised when the ledger is to be pruned by a role that does not own it: it is append-only for every other. */
export class LedgerPruneRefusedError extends IdempotencyError {
  override readonly name = 'LedgerPruneRefusedError';
  readonly code = 'ledger-prune-refused';
}

/** Why a record cannot be obeyed, for an operator's message. */
function authenticityText(claim: Claim): string {
  return claim.authenticity === 'rejected'
    ? `does not check under secret ${claim.signedBy}, which signed it: it was written or changed without it (forged, copied, or edited)`
    : claim.signedBy === null
      ? "is unsigned, and the CLI's settings require signed records (add 'unsigned' to previousSecrets only while adopting a first secret)"
      : `is signed by secret ${claim.signedBy}, which the CLI was not given (--worker-config, with previousSecrets)`;
}

export class ClaimOperations {
  readonly schema: string;
  private readonly claims: string;
  private readonly waiters: string;
  private readonly ledgerCalls: string;
  private readonly ledgerEntries: string;
  private readonly operatorTrail: string;
  private readonly settings: string;
  private readonly channel: string;
  private readonly signer: RecordSigner;
  private schemaChecked: Promise<void> | undefined;
  private salt: Promise<KeySalt> | undefined;

  constructor(
    private readonly pool: pg.Pool,
    options: ClaimOperationsOptions = {},
  ) {
    this.schema = options.schema ?? DEFAULT_SCHEMA;
    const quoted = quoteIdentifier('schema', this.schema);
    this.claims = `${quoted}.claims`;
    this.waiters = `${quoted}.waiters`;
    this.ledgerCalls = `${quoted}.ledger_calls`;
    this.ledgerEntries = `${quoted}.ledger`;
    this.operatorTrail = `${quoted}.operator_actions`;
    this.settings = `${quoted}.settings`;
    this.channel = outcomeChannel(this.schema);
    this.signer = new RecordSigner(options);
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
    return toClaim(rows[0], this.signer);
  }

  /** The arguments recorded with the claim (encoded like its result); null when none were. */
  async recordedArguments(key: string): Promise<Payload | null> {
    await this.schemaReady();
    const { rows } = await this.pool.query<{ call_arguments: PayloadJson | null }>(`SELECT call_arguments FROM ${this.claims} WHERE key = $1`, [key]);
    if (!rows[0]) throw new ClaimNotFoundError(key);
    return rows[0].call_arguments ? payloadFromJson(rows[0].call_arguments) : null;
  }

  /** The schema's key salt, which every key and fingerprint in it is hashed under. */
  keySalt(): Promise<KeySalt> {
    this.salt ??= (async () => {
      await this.schemaReady();
      const { rows } = await this.pool.query<{ key_salt: Buffer }>(`SELECT key_salt FROM ${this.settings}`);
      return new KeySalt(rows[0]!.key_salt);
    })().catch((error: unknown) => {
      this.salt = undefined;
      throw error;
    });
    return this.salt;
  }

  /**
   * The results `activityType` recorded last (newest first, at most `limit`, none of `exceptKey`), whose
   * records check: what `resolve` holds an operator's result against.
   */
  async recordedResults(activityType: string, exceptKey: string, limit = 20): Promise<Payload[]> {
    await this.schemaReady();
    const { rows } = await this.pool.query<ClaimRow>(
      `SELECT ${CLAIM_READ} FROM ${this.claims}
WHERE activity_type = $1 AND state = 'completed' AND key <> $2
ORDER BY finished_at DESC
LIMIT $3`,
      [activityType, exceptKey, limit],
    );
    return rows
      .map((row) => toClaim(row, this.signer))
      .filter((claim) => claim.authenticity === 'verified' || claim.authenticity === 'not-checked')
      .map((claim) => claim.result!);
  }

  /**
   * Whether `argsText` (recorded arguments, decoded) is what the claim's fingerprint was made from:
   * arguments that were swapped in the table do not match.
   */
  async argumentsMatch(claim: Claim, argsText: string): Promise<boolean> {
    return (await this.keySalt()).hash('fingerprint', [argsText]) === claim.fingerprint;
  }

  /**
   * It happened, and this is what it returned (encoded as the workers encode results): later attempts
   * replay `result`. Signed when the deployment signs its records. Returns the claim as it was.
   */
  async resolve(key: string, result: Payload, options: ChangeOptions): Promise<Claim> {
    return this.change(key, 'resolve', options, async (client, claim) => {
      const json = payloadToJson(result);
      const note = pgText(`resolved by an operator (was ${claim.state}${claim.outcomeNote ? `: ${claim.outcomeNote}` : ''})`);
      const { mac, secretId } = this.signer.sign({ ...claim, state: 'completed', result: json, outcomeNote: note, outcomeDetail: null });
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
    const claim = toClaim(rows[0], this.signer);
    if (claim.authenticity === 'rejected' || claim.authenticity === 'unverifiable') {
      throw new ClaimChangeRefusedError('not-authentic', claim, `Key ${key}'s record ${authenticityText(claim)}: see SECURITY.md before resuming anything.`);
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
   * Deletes (or with `dryRun`, counts) the ledger entries of whole calls whose last entry is older
   * than the horizon: never a call under a day old, nor one any of whose keys still has a claim without
   * an outcome (the runbook needs those). Only the schema's owner may: the ledger is append-only for
   * every other role, by trigger. Appends to the operator trail. Returns the entries.
   */
  async pruneLedger(olderThanMs: number, options: { reason?: string | undefined; dryRun?: boolean } = {}): Promise<number> {
    horizonMs('olderThanMs', olderThanMs);
    optionalBoolean('dryRun', options.dryRun);
    if (olderThanMs < LEDGER_FLOOR_MS) {
      throw new InvalidArgumentError('olderThanMs', 'ClaimOperations: the ledger keeps every call for at least a day: olderThanMs must be at least 86400000.');
    }
    await this.schemaReady();
    // Every key the call's entries name, not one: the worker role writes the entries, and one under another key
    // must not make a call whose claim has no outcome look settled.
    const prunable = `
SELECT entry.call_id
FROM ${this.ledgerEntries} AS entry
GROUP BY entry.call_id
HAVING max(entry.at) < now() - $1::float8 * interval '1 millisecond'
  AND NOT EXISTS (SELECT 1 FROM ${this.claims} AS claim WHERE claim.key = ANY (array_agg(entry.key)) AND claim.state <> 'completed')`;
    // Asked first, so a prune that would fail on the ledger fails before it deletes any claim.
    const { rows: owner } = await this.pool.query<{ owns: boolean }>(
      'SELECT pg_get_userbyid(relowner) = current_user AS owns FROM pg_class WHERE oid = $1::regclass',
      [this.ledgerEntries],
    );
    if (owner[0]?.owns !== true) {
      throw new LedgerPruneRefusedError(
        `The ledger of schema "${this.schema}" is append-only for every role but its owner: prune it as the role that ` +
          'ran migrate (the migrator). Nothing was deleted.',
      );
    }
    if (options.dryRun) {
      const { rows } = await this.pool.query<{ count: number }>(
        `SELECT count(*)::integer AS count FROM ${this.ledgerEntries} WHERE call_id IN (${prunable})`,
        [olderThanMs],
      );
      return rows[0]?.count ?? 0;
    }
    return inTransaction(this.pool, async (client) => {
      const { rowCount } = await client.query(`DELETE FROM ${this.ledgerEntries} WHERE call_id IN (${prunable})`, [olderThanMs]);
      const pruned = rowCount ?? 0;
      await this.recordAction(client, {
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

  /**
   * How many claims a ledger query is about (by key or workflow; all of them without either), and how many
   * were made by workers without an audit ledger: for those, no entry does not mean no call.
   */
  async ledgerCoverage(filter: Omit<LedgerFilter, 'limit'>): Promise<{ claims: number; unaudited: number }> {
    await this.schemaReady();
    const { rows } = await this.pool.query<{ claims: number; unaudited: number }>(
      `
SELECT count(*)::integer AS claims, count(*) FILTER (WHERE NOT audited)::integer AS unaudited
FROM ${this.claims}
WHERE ($1::text IS NULL OR key = $1) AND ($2::text IS NULL OR workflow_id = $2)`,
      [filter.key ?? null, filter.workflowId ?? null],
    );
    return rows[0] ?? { claims: 0, unaudited: 0 };
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
    apply: (client: pg.PoolClient, claim: Claim) => Promise<{ state: string }>,
  ): Promise<Claim> {
    await this.schemaReady();
    return inTransaction(this.pool, async (client) => {
      const { rows } = await client.query<ClaimRow>(`SELECT ${CLAIM_READ} FROM ${this.claims} WHERE key = $1 FOR UPDATE`, [key]);
      if (!rows[0]) throw new ClaimNotFoundError(key);
      const claim = toClaim(rows[0], this.signer);
      const refusal = changeRefusal(claim, action, options.force, secretIds('distrust', options.distrust ?? []));
      if (refusal) throw refusal;
      if (action === 'resolve' && claim.signedBy !== null && this.signer.signingSecretId === null) {
        throw new SecretRequiredError(
          `Key ${key}'s record is signed (secret ${claim.signedBy}): the workers sign their records, and refuse one the CLI ` +
            `would write unsigned. Give the CLI their secret (TEMPORAL_IDEMPOTENCY_SECRET, or secret in --worker-config). ` +
            'Nothing was changed.',
        );
      }
      // Resolving signs the row, fingerprint and all: never over a record that does not check (forged, or read
      // without the right secret), unless the operator says they know.
      if (action === 'resolve' && (claim.authenticity === 'rejected' || claim.authenticity === 'unverifiable') && !options.force) {
        throw new ClaimChangeRefusedError(
          'not-authentic',
          claim,
          `Key ${key}'s record ${authenticityText(claim)}. Nothing was changed; --force signs it anyway, once you know ` +
            'it is genuine (see SECURITY.md).',
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

  /** How many rows each record secret signs, and which of them the CLI holds. */
  async signers(): Promise<SignerCount[]> {
    await this.schemaReady();
    return signerCounts(this.pool, this.claims, this.signer);
  }

  /**
   * Signs with the CLI's `secret` (the workers' current one) every row signed by another secret, or
   * unsigned, whose record checks under a secret the CLI holds (unsigned rows only when it obeys
   * them: `'unsigned'` in its `previousSecrets`): the step of a rotation after which the old secret
   * can be dropped. A row that does not check, or is signed by a secret the CLI lacks, is left and
   * listed; so is one signed by a secret in `distrust` (a leaked one: whoever holds it may have
   * planted a receipt for a call not yet made), for a person to check against the vendor.
   */
  async resign(options: { distrust?: readonly string[]; reason?: string | undefined; batchSize?: number } = {}): Promise<ResigningReport> {
    const batch = batchSize(options.batchSize, 500);
    const distrust = secretIds('distrust', options.distrust ?? []);
    await this.schemaReady();
    // A distrusted id that is neither a secret the CLI holds nor any row's signer is a typo: the leaked secret's rows
    // would be signed anew.
    const signers = new Set((await this.signers()).map((signer) => signer.secretId));
    const unknown = distrust.filter((id) => !signers.has(id) && !this.signer.holds(id));
    if (unknown.length > 0) {
      throw new InvalidSecretError(
        `--distrust ${unknown.join(', ')}: no row here is signed by it and the CLI does not hold it; a typo would leave the ` +
          'leaked secret trusted. Check `keys status`. Nothing was changed.',
      );
    }
    const report = await resignRecords(this.pool, this.claims, this.signer, { distrust, batchSize: batch });
    await inTransaction(this.pool, (client) =>
      this.recordAction(client, {
        action: 're-sign',
        key: null,
        reason: options.reason,
        forced: false,
        before: { distrust },
        after: {
          signedBy: report.signingSecretId,
          resigned: report.resigned,
          rejected: report.rejected.length,
          unverifiable: report.unverifiable.length,
          distrusted: report.distrusted.length,
          changedMeanwhile: report.changedMeanwhile,
        },
      }),
    );
    return report;
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
