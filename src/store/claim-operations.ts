/**
 * What an operator does to claims after a refusal: look, resolve, release, prune, read the ledger,
 * move rows to a new record secret. The CLI only parses, prints and maps errors to exit codes; the
 * work is in `operator/` (reads, changes, pruning, resigning) and every statement in `sql/`, beside
 * the ones the workers send.
 */
import type pg from 'pg';
import type { Payload } from '@temporalio/common';
import type { Claim, Waiter } from './claim-store.js';
import { DEFAULT_SCHEMA, quoteIdentifier } from './identifiers.js';
import { KeySalt } from '../key/index.js';
import { assertSchemaUsable } from './schema-version.js';
import { RecordSigner } from './record-signing.js';
import { storeSql } from './sql/index.js';
import type { OperatorContext } from './operator/context.js';
import * as reads from './operator/reads.js';
import * as changes from './operator/changes.js';
import * as pruning from './operator/pruning.js';
import { resign, signerCounts } from './operator/resigning.js';
import type { ResigningReport, SignerCount } from './operator/resigning.js';
import type {
  ChangeOptions,
  ClaimOperationsOptions,
  ClaimSummary,
  LedgerEntry,
  LedgerFilter,
  ListFilter,
  OperatorAction,
  PruneCandidateWorkflow,
  PruneScope,
  PruneSummary,
} from './operator/types.js';

export class ClaimOperations {
  readonly schema: string;
  private readonly context: OperatorContext;
  private schemaChecked: Promise<void> | undefined;
  private salt: Promise<KeySalt> | undefined;

  constructor(pool: pg.Pool, options: ClaimOperationsOptions = {}) {
    this.schema = options.schema ?? DEFAULT_SCHEMA;
    this.context = {
      pool,
      schema: this.schema,
      sql: storeSql(quoteIdentifier('schema', this.schema)),
      signer: new RecordSigner(options),
      ready: () => this.schemaReady(),
    };
  }

  /**
   * Claims without an outcome first (they are the ones that need a person), oldest first, a page at a
   * time from one server-side cursor, so a caller that prints as it goes holds one page.
   */
  listPages(filter: ListFilter, pageSize = 1_000): AsyncGenerator<ClaimSummary[]> {
    return reads.listPages(this.context, filter, pageSize);
  }

  show(key: string): Promise<Claim> {
    return reads.show(this.context, key);
  }

  /** The arguments recorded with the claim (encoded like its result); null when none were. */
  recordedArguments(key: string): Promise<Payload | null> {
    return reads.recordedArguments(this.context, key);
  }

  /** The schema's key salt, which every key and fingerprint in it is hashed under. */
  keySalt(): Promise<KeySalt> {
    this.salt ??= (async () => {
      await this.schemaReady();
      const { rows } = await this.context.pool.query<{ key_salt: Buffer }>(this.context.sql.keySalt);
      return new KeySalt(rows[0]!.key_salt);
    })().catch((error: unknown) => {
      this.salt = undefined;
      throw error;
    });
    return this.salt;
  }

  /** The results `activityType` recorded last whose records check: what `resolve` holds an operator's result against. */
  recordedResults(activityType: string, exceptKey: string, limit = 20): Promise<Payload[]> {
    return reads.recordedResults(this.context, activityType, exceptKey, limit);
  }

  /** Whether `argsText` (recorded arguments, decoded) is what the claim's fingerprint was made from. */
  async argumentsMatch(claim: Claim, argsText: string): Promise<boolean> {
    return (await this.keySalt()).hash('fingerprint', [argsText]) === claim.fingerprint;
  }

  /** It happened, and this is what it returned: later attempts replay `result`. Returns the claim as it was. */
  resolve(key: string, result: Payload, options: ChangeOptions): Promise<Claim> {
    return changes.resolve(this.context, key, result, options);
  }

  /** It did not happen: delete the claim, so the next attempt runs the activity for real. Returns the claim as it was. */
  release(key: string, options: ChangeOptions): Promise<Claim> {
    return changes.release(this.context, key, options);
  }

  /** For a key with no claim left (deleted outside the CLI): records the release, so `resume` may tell waiters to call again. */
  releaseAbsent(key: string, options: { reason?: string | undefined }): Promise<void> {
    return changes.releaseAbsent(this.context, key, options);
  }

  /** The operator trail of `key`, oldest first: its own entries and the prunes that list it. */
  operatorActions(key: string): Promise<OperatorAction[]> {
    return reads.operatorActions(this.context, key);
  }

  /** What a workflow waiting on `key` in `resumable()` will find when called again. */
  outcomeFor(key: string): Promise<'resolved' | 'released'> {
    return changes.outcomeFor(this.context, key);
  }

  /** Every workflow to tell about a decision on `key`: the claim's own and every one refused on it. */
  waitersOf(key: string, claim?: Pick<Claim, 'namespace' | 'workflowId' | 'runId' | 'activityType'>): Promise<Waiter[]> {
    return reads.waitersOf(this.context, key, claim);
  }

  markSignalled(waiter: Pick<Waiter, 'key' | 'namespace' | 'workflowId'>): Promise<void> {
    return changes.markSignalled(this.context, waiter);
  }

  forgetWaiter(waiter: Pick<Waiter, 'key' | 'namespace' | 'workflowId'>): Promise<void> {
    return changes.forgetWaiter(this.context, waiter);
  }

  /** The database's clock: the instant to measure a prune's horizon from (`PruneScope.asOf`). */
  databaseNow(): Promise<Date> {
    return pruning.databaseNow(this.context);
  }

  /** The namespaces completed claims were made in: whose retention decides how long they must stay. */
  completedClaimNamespaces(): Promise<string[]> {
    return pruning.completedClaimNamespaces(this.context);
  }

  /** The workflows whose completed claims `prune(olderThanMs, scope)` would delete, with how many each. */
  pruneCandidateWorkflows(olderThanMs: number, scope: PruneScope = {}, pageSize = 1_000): AsyncGenerator<PruneCandidateWorkflow[]> {
    return pruning.pruneCandidateWorkflows(this.context, olderThanMs, scope, pageSize);
  }

  /** Deletes (or counts) the ledger calls past the horizon, never one under a day old or with an open claim; owner only. */
  pruneLedger(olderThanMs: number, options: { reason?: string | undefined; dryRun?: boolean } = {}): Promise<number> {
    return pruning.pruneLedger(this.context, olderThanMs, options);
  }

  /** What `prune(olderThanMs, scope)` would delete. */
  pruneSummary(olderThanMs: number, scope: PruneScope = {}): Promise<PruneSummary> {
    return pruning.pruneSummary(this.context, olderThanMs, scope);
  }

  /**
   * Deletes completed claims finished before the cutoff; never one without an outcome, one a
   * waiting workflow may still need, nor one of `scope.keepWorkflows`. Returns how many.
   */
  prune(olderThanMs: number, options: PruneScope & { reason?: string | undefined; forced?: boolean } = {}): Promise<number> {
    return pruning.prune(this.context, olderThanMs, options);
  }

  /** How many claims a ledger query is about, and how many were made by workers without an audit ledger. */
  ledgerCoverage(filter: Omit<LedgerFilter, 'limit'>): Promise<{ claims: number; unaudited: number }> {
    return reads.ledgerCoverage(this.context, filter);
  }

  /** The audit ledger's calls, a page at a time from one server-side cursor, as `listPages`. */
  ledgerPages(filter: LedgerFilter, pageSize = 1_000): AsyncGenerator<LedgerEntry[]> {
    return reads.ledgerPages(this.context, filter, pageSize);
  }

  /** How many rows each record secret signs, and which of them the CLI holds. */
  async signers(): Promise<SignerCount[]> {
    await this.schemaReady();
    return signerCounts(this.context);
  }

  /**
   * Signs with the CLI's `secret` every row signed by another secret, or unsigned, whose record checks
   * under a secret the CLI holds: the step of a rotation after which the old secret can be dropped. A row
   * that does not check, is signed by a secret the CLI lacks, or by one in `distrust` (leaked), is left and
   * listed, for a person to check against the vendor.
   */
  resign(options: { distrust?: readonly string[]; reason?: string | undefined; batchSize?: number } = {}): Promise<ResigningReport> {
    return resign(this.context, options);
  }

  /**
   * Once per instance, before the first statement: a schema this release cannot use (never migrated,
   * or migrated by a newer release) is reported by name, as the workers report it, instead of as
   * `relation "…" does not exist` from whichever statement came first.
   */
  private schemaReady(): Promise<void> {
    this.schemaChecked ??= assertSchemaUsable(this.context.pool, this.schema).then(() => undefined).catch((error: unknown) => {
      this.schemaChecked = undefined;
      throw error;
    });
    return this.schemaChecked;
  }
}
