/**
 * The audit ledger's interface: calls that actually went out, appended as a
 * start entry before the call and a finish entry after it.
 */

import type { Payload } from '@temporalio/common';

export type LedgerOutcome = 'completed' | 'failed' | 'outcome-unknown' | 'async';

export interface LedgerCall {
  /** Pairs a call's start and finish entries. */
  readonly callId: string;
  readonly key: string;
  readonly activityType: string;
  readonly workflowId: string | null;
  readonly runId: string | null;
  readonly activityId: string;
  readonly attempt: number;
  readonly worker: string;
}

/** How a failed call ended: its error's class (safe to show), and its text through the worker's codec. */
export interface LedgerError {
  readonly errorClass: string;
  readonly detail: Payload | null;
}

export interface AuditLedger {
  /** Appends, durably, that the call is about to go out. */
  recordStart(call: LedgerCall): Promise<void>;
  /** Appends how the call ended. */
  recordFinish(call: LedgerCall, outcome: LedgerOutcome, error: LedgerError | null): Promise<void>;
}
