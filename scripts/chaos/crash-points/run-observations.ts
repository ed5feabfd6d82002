/**
 * What the harness reads from outside the workers about one run's workflow: its claims in
 * Postgres (polled, so a kill can follow a commit within milliseconds), the refusals in its
 * Temporal history, and the vendor questions recorded in the ledger.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import type { WorkflowHandle } from '@temporalio/client';
import { IdempotencyOrphanedClaim } from '../../../src/index.js';

export interface ClaimRow {
  readonly key: string;
  readonly state: string;
  readonly claimedBy: string;
}

export class RunObservations {
  constructor(
    private readonly pool: pg.Pool,
    private readonly schema: string,
    private readonly workflowId: string,
  ) {}

  async claims(): Promise<ClaimRow[]> {
    const { rows } = await this.pool.query<ClaimRow>(
      `SELECT key, state, claimed_by AS "claimedBy" FROM "${this.schema}".claims WHERE workflow_id = $1 ORDER BY key`,
      [this.workflowId],
    );
    return rows;
  }

  /** Polls the run's claims until `wanted` holds; false when `signal` ends the wait first. */
  async untilClaims(wanted: (claims: ClaimRow[]) => boolean, signal: AbortSignal): Promise<boolean> {
    while (!signal.aborted) {
      if (wanted(await this.claims())) return true;
      await sleep(5);
    }
    return false;
  }

  /** Answers the workers' reconcilers recorded for this workflow: `happened`, `not-happened`, `unknown`. */
  async reconciliations(): Promise<string[]> {
    const { rows } = await this.pool.query<{ answer: string }>(
      `SELECT answer FROM "${this.schema}".ledger_reconciliations WHERE workflow_id = $1`,
      [this.workflowId],
    );
    return rows.map((row) => row.answer);
  }
}

/** How many attempts of the workflow were refused as orphaned: each one a person has to look at. */
export async function orphanRefusals(handle: WorkflowHandle): Promise<number> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).filter(
    (event) => event.activityTaskFailedEventAttributes?.failure?.applicationFailureInfo?.type === IdempotencyOrphanedClaim,
  ).length;
}

/** Polls the history until an attempt was refused as orphaned; false when `signal` ends the wait first. */
export async function untilRefused(handle: WorkflowHandle, signal: AbortSignal): Promise<boolean> {
  while (!signal.aborted) {
    if ((await orphanRefusals(handle)) > 0) return true;
    await sleep(100);
  }
  return false;
}
