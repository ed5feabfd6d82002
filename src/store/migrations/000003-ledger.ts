/**
 * The audit ledger: calls that actually went out. Append-only: a `started` row
 * before the call, a `finished` row after it, never an UPDATE or DELETE, so
 * the workers' role can be granted INSERT and SELECT alone. A crash mid-call
 * leaves a `started` row without its `finished` one.
 * Never edit after release: add a new migration instead.
 */
export default (schema: string): string => `
CREATE TABLE ${schema}.ledger (
  id bigserial PRIMARY KEY,
  call_id uuid NOT NULL,
  event text NOT NULL CHECK (event IN ('started', 'finished')),
  key text NOT NULL,
  activity_type text NOT NULL,
  workflow_id text,
  run_id text,
  activity_id text NOT NULL,
  attempt integer NOT NULL,
  worker text NOT NULL,
  at timestamptz NOT NULL DEFAULT now(),
  outcome text CHECK (outcome IN ('completed', 'failed', 'outcome-unknown', 'async')),
  error_message text,
  CHECK ((event = 'finished') = (outcome IS NOT NULL)),
  UNIQUE (call_id, event)
);

CREATE INDEX ledger_key_idx ON ${schema}.ledger (key);

-- One row per call, as people read it: started, finished (null while running or after a crash).
CREATE VIEW ${schema}.ledger_calls AS
SELECT
  started.call_id, started.key, started.activity_type, started.workflow_id, started.run_id,
  started.activity_id, started.attempt, started.worker,
  started.at AS started_at, finished.at AS finished_at, finished.outcome, finished.error_message
FROM ${schema}.ledger AS started
LEFT JOIN ${schema}.ledger AS finished
  ON finished.call_id = started.call_id AND finished.event = 'finished'
WHERE started.event = 'started';
`;
