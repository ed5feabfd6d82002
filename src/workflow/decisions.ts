/**
 * The operator decisions a workflow has received, and the refused calls it
 * waits on. Workflow code: the SDK gives each workflow execution its own copy
 * of this module's state.
 */
import { log, setCurrentDetails } from '@temporalio/workflow';
import type { OperatorDecision } from '../operator-decision.js';

/** A refused call this workflow is waiting on, as the query and the current details show it. */
export interface PendingRefusal {
  readonly key: string;
  readonly activityType: string;
  /** Workflow time at which the refusal arrived. */
  readonly since: string;
  readonly message: string;
}

/** Refused calls waited on, by key, with how many `resumable()` calls wait on each. */
const pending = new Map<string, { refusal: PendingRefusal; waiters: number }>();
/**
 * Every well-formed decision, in arrival order; never consumed. A waiter counts those that arrived
 * since its call was made: a decision can reach the workflow in the same task as the refusal it
 * answers, and the SDK delivers signals first.
 */
const accepted: Array<OperatorDecision & { readonly seq: number }> = [];
/** Bounds memory against a flood of signals: a waiter needs only decisions newer than its call. */
const MAX_KEPT_DECISIONS = 1_000;
let nextSeq = 0;

export const decisions = {
  /** The sequence number the next accepted decision gets: a waiter counts only decisions from here on. */
  get nextSeq(): number {
    return nextSeq;
  },

  /** The signal handler: well-formed decisions for pending keys are kept; the rest are logged and ignored. */
  receive(input: unknown): void {
    if (!isOperatorDecision(input)) {
      log.warn('Ignored a malformed operator decision: expected { key: string, decision: "resolved" | "released" }', {
        received: describe(input),
      });
      return;
    }
    const decision: OperatorDecision = { key: input.key, decision: input.decision };
    if (!pending.has(decision.key)) {
      log.info('Kept an operator decision for a key this workflow is not waiting on (yet)', { idempotencyKey: decision.key });
    }
    accepted.push({ ...decision, seq: nextSeq++ });
    if (accepted.length > MAX_KEPT_DECISIONS) accepted.shift();
  },

  /** The first decision on `key` that arrived at or after `fromSeq`. */
  since(key: string, fromSeq: number): OperatorDecision | undefined {
    return accepted.find((decision) => decision.key === key && decision.seq >= fromSeq);
  },

  startWaiting(refusal: PendingRefusal): void {
    const entry = pending.get(refusal.key) ?? { refusal, waiters: 0 };
    entry.waiters += 1;
    pending.set(refusal.key, entry);
    showPending();
  },

  /** Also on cancellation: a wait that ended for any reason no longer shows as waiting. */
  stopWaiting(key: string): void {
    const entry = pending.get(key);
    if (!entry) return;
    entry.waiters -= 1;
    if (entry.waiters <= 0) pending.delete(key);
    showPending();
  },

  pendingRefusals(): PendingRefusal[] {
    return [...pending.values()].map((entry) => entry.refusal);
  },
};

function isOperatorDecision(value: unknown): value is OperatorDecision {
  const candidate = value as Partial<OperatorDecision> | null | undefined;
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    typeof candidate.key === 'string' &&
    candidate.key !== '' &&
    (candidate.decision === 'resolved' || candidate.decision === 'released')
  );
}

function describe(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** Shown in the Web UI's "current details" of the workflow. */
function showPending(): void {
  // The refusal's own words: they carry the commands to paste, with the key, and when --force is needed.
  const lines = [...pending.values()].map(
    ({ refusal }) => `Waiting for an operator decision on ${refusal.activityType} (key ${refusal.key}). ${refusal.message}`,
  );
  setCurrentDetails(lines.join('\n\n'));
}
