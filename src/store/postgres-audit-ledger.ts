/** The audit ledger in Postgres, beside the claims: INSERT only. */
import type pg from 'pg';
import type { AuditLedger, LedgerCall, LedgerError, LedgerOutcome } from './audit-ledger.js';
import { payloadToJson } from './payload-json.js';
import { DEFAULT_SCHEMA, quoteIdentifier } from './identifiers.js';
import { pgText } from './pg-text.js';

export class PostgresAuditLedger implements AuditLedger {
  private readonly table: string;

  constructor(
    private readonly pool: pg.Pool,
    schema: string = DEFAULT_SCHEMA,
  ) {
    this.table = `${quoteIdentifier('schema', schema)}.ledger`;
  }

  async recordStart(call: LedgerCall): Promise<void> {
    await this.append(call, 'started', null, null);
  }

  async recordFinish(call: LedgerCall, outcome: LedgerOutcome, error: LedgerError | null): Promise<void> {
    await this.append(call, 'finished', outcome, error);
  }

  /** `error_message` keeps the error's class only: its text may carry user data, so it goes in `error_detail`, encoded. */
  private async append(call: LedgerCall, event: string, outcome: LedgerOutcome | null, error: LedgerError | null): Promise<void> {
    await this.pool.query(
      `
INSERT INTO ${this.table}
  (call_id, event, key, activity_type, workflow_id, run_id, activity_id, attempt, worker, outcome, error_message,
   error_class, error_detail)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11, $12)`,
      [
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
    );
  }
}
