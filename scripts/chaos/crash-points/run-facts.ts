/** What one crash-point run left behind, as seen from outside: the vendor, Temporal, Postgres. */
import type { VendorReceipt } from '../../../activities/index.js';

export type WorkflowOutcome =
  | { readonly kind: 'completed'; readonly receipts: readonly VendorReceipt[] }
  /** Failed with a refusal by name (`Idempotency…`). */
  | { readonly kind: 'refused'; readonly type: string }
  /** Failed any other way. */
  | { readonly kind: 'failed'; readonly type: string }
  /** Neither, after the bounded wait. */
  | { readonly kind: 'open' };

export interface RunFacts {
  readonly point: string;
  readonly seed: number;
  readonly reconcile: boolean;
  /** The kills landed where the point says; false when a wait for the moment ran out. */
  readonly reached: boolean;
  /** The charges the workflow asked for, in order: each a distinct order. */
  readonly orderIds: readonly string[];
  readonly outcome: WorkflowOutcome;
  /** Every charge the vendor made. */
  readonly actions: readonly { readonly orderId: string; readonly id: string; readonly key: string | null }[];
  /** Keys that reached the vendor again after it had taken them (a second call its dedup hid). */
  readonly keysSentAgain: readonly string[];
  /** Attempts refused as orphaned (`IdempotencyOrphanedClaim`) in the workflow's history. */
  readonly refusals: number;
  /** The reconcilers' answers in the ledger: `happened`, `not-happened`, `unknown`. */
  readonly reconciliations: readonly string[];
  /** Worker processes that exited without being killed by the harness. */
  readonly workersDiedAlone: number;
  readonly notes: readonly string[];
  readonly seconds: number;
}
