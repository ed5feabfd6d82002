/** The audit ledger in Postgres, beside the claims: INSERT only. */
import type pg from 'pg';
import type { AuditLedger, LedgerCall, LedgerError, LedgerOutcome, ReconcileOutcome } from './audit-ledger.js';
import { payloadToJson } from './payload-json.js';
import { DEFAULT_SCHEMA, quoteIdentifier } from './identifiers.js';
import { pgText } from './pg-text.js';
import { ledgerSql } from './sql/ledger.js';
import { STATEMENT_TIMEOUT_MS } from './postgres/context.js';

export class PostgresAuditLedger implements AuditLedger {
  private readonly appendStatement: string;

  constructor(
    private readonly pool: pg.Pool,
    schema: string = DEFAULT_SCHEMA,
  ) {
    this.appendStatement = ledgerSql(quoteIdentifier('schema', schema)).append;
  }

  /** Not bounded: a start entry given up while it waits on a lock would commit later, for a call never made. */
  async recordStart(call: LedgerCall): Promise<void> {
    await this.append(call, 'started', null, null);
  }

  async recordFinish(call: LedgerCall, outcome: LedgerOutcome, error: LedgerError | null): Promise<void> {
    await this.append(call, 'finished', outcome, error, STATEMENT_TIMEOUT_MS);
  }

  async recordReconciliation(call: LedgerCall, answer: ReconcileOutcome): Promise<void> {
    await this.append(call, 'reconciled', answer, null, STATEMENT_TIMEOUT_MS);
  }

  /** `error_message` keeps the error's class only: its text may carry user data, so it goes in `error_detail`, encoded. */
  private async append(
    call: LedgerCall,
    event: string,
    outcome: LedgerOutcome | ReconcileOutcome | null,
    error: LedgerError | null,
    /** For the entries after a call: one stuck on a connection a partition left silent would hold the attempt, and its record. */
    timeoutMs?: number,
  ): Promise<void> {
    await this.pool.query({
      text: this.appendStatement,
      ...(timeoutMs === undefined ? {} : { query_timeout: timeoutMs }),
      values: [
        call.callId,
        event,
        call.key,
        call.activityType,
        call.workflowId,
        call.runId,
        call.activityId,
        call.attempt,
        call.worker,
        outcome,
        error ? pgText(error.errorClass) : null,
        error?.detail ? payloadToJson(error.detail) : null,
      ],
    } as pg.QueryConfig);
  }
}
