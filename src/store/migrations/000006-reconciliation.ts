/**
 * Reconciliations in the ledger: when an attempt asked the vendor about an
 * orphaned call, a `reconciled` row with the answer (`happened`, `not-happened`,
 * `unknown`). Never edit after release: add a new migration instead.
 */
export default (schema: string): string => `
ALTER TABLE ${schema}.ledger
  DROP CONSTRAINT IF EXISTS ledger_event_check,
  DROP CONSTRAINT IF EXISTS ledger_outcome_check,
  DROP CONSTRAINT IF EXISTS ledger_check;

ALTER TABLE ${schema}.ledger
  ADD CONSTRAINT ledger_event_check CHECK (event IN ('started', 'finished', 'reconciled')),
  ADD CONSTRAINT ledger_outcome_check
    CHECK (outcome IN ('completed', 'failed', 'outcome-unknown', 'async', 'happened', 'not-happened', 'unknown')),
  ADD CONSTRAINT ledger_check CHECK ((event = 'started') = (outcome IS NULL));

CREATE VIEW ${schema}.ledger_reconciliations AS
SELECT call_id, key, activity_type, workflow_id, run_id, activity_id, attempt, worker, at, outcome AS answer, error_class
FROM ${schema}.ledger
WHERE event = 'reconciled';
`;
