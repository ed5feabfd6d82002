/**
 * The audit ledger's interface: calls that actually went out, appended as a
 * start entry before the call and a finish entry after it.
 */

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

export interface AuditLedger {
  /** Appends, durably, that the call is about to go out. */
  recordStart(call: LedgerCall): Promise<void>;
  /** Appends how the call ended. */
  recordFinish(call: LedgerCall, outcome: LedgerOutcome, errorMessage: string | null): Promise<void>;
}
