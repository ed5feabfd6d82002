/** The audit ledger in Postgres, beside the claims: INSERT only. */
import type pg from 'pg';
import type { AuditLedger, LedgerCall, LedgerOutcome } from './audit-ledger.js';
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

  async recordFinish(call: LedgerCall, outcome: LedgerOutcome, errorMessage: string | null): Promise<void> {
    await this.append(call, 'finished', outcome, errorMessage);
  }

  private async append(call: LedgerCall, event: string, outcome: LedgerOutcome | null, errorMessage: string | null): Promise<void> {
    await this.pool.query(
      `
INSERT INTO ${this.table}
  (call_id, event, key, activity_type, workflow_id, run_id, activity_id, attempt, worker, outcome, error_message)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
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
        pgText(errorMessage),
      ],
    );
  }
}
