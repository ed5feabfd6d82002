/** What operators ask for and are given: filters, summaries, the trail's entries. */
import type { Claim } from '../claim-store.js';
import type { TrustOptions } from '../record-signing.js';

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
