/**
 * The audit ledger in memory, beside the in-memory claims: what the
 * interceptors append with `audit: true`, kept for a test to read. Append-only
 * by its interface (nothing here changes an entry); not durable.
 */
import type { AuditLedger, LedgerCall, LedgerError, LedgerOutcome, ReconcileOutcome } from '../store/audit-ledger.js';
import type { Clock } from './clock.js';

/** One appended entry: a call about to go out, how it ended, or what a reconciliation answered. */
export type LedgerRecord =
  | { readonly event: 'started'; readonly at: Date; readonly call: LedgerCall }
  | { readonly event: 'finished'; readonly at: Date; readonly call: LedgerCall; readonly outcome: LedgerOutcome; readonly error: LedgerError | null }
  | { readonly event: 'reconciled'; readonly at: Date; readonly call: LedgerCall; readonly answer: ReconcileOutcome };

/** A call that went out, its start and finish entries together (as the CLI's `ledger` shows them). */
export interface LedgerCallSummary extends LedgerCall {
  readonly startedAt: Date;
  readonly finishedAt: Date | null;
  /** Null while the call has not finished (or its process died first). */
  readonly outcome: LedgerOutcome | null;
  readonly errorClass: string | null;
}

export class InMemoryAuditLedger implements AuditLedger {
  private readonly records: LedgerRecord[] = [];

  constructor(private readonly clock: Clock) {}

  async recordStart(call: LedgerCall): Promise<void> {
    this.records.push({ event: 'started', at: this.now(), call: { ...call } });
  }

  async recordFinish(call: LedgerCall, outcome: LedgerOutcome, error: LedgerError | null): Promise<void> {
    this.records.push({ event: 'finished', at: this.now(), call: { ...call }, outcome, error });
  }

  async recordReconciliation(call: LedgerCall, answer: ReconcileOutcome): Promise<void> {
    this.records.push({ event: 'reconciled', at: this.now(), call: { ...call }, answer });
  }

  /** Every entry, in the order appended. */
  entries(): readonly LedgerRecord[] {
    return [...this.records];
  }

  /** The calls that went out, first started first. */
  calls(): LedgerCallSummary[] {
    const finishes = new Map<string, Extract<LedgerRecord, { event: 'finished' }>>();
    for (const record of this.records) if (record.event === 'finished') finishes.set(record.call.callId, record);
    return this.records
      .filter((record) => record.event === 'started')
      .map(({ call, at }) => {
        const finish = finishes.get(call.callId);
        return {
          ...call,
          startedAt: at,
          finishedAt: finish?.at ?? null,
          outcome: finish?.outcome ?? null,
          errorClass: finish?.error?.errorClass ?? null,
        };
      });
  }

  private now(): Date {
    return new Date(this.clock.now());
  }
}
