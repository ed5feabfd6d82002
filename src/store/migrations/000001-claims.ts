/** Never edit after release: add a new migration instead. */
export default (schema: string): string => `
CREATE TABLE ${schema}.claims (
  key text PRIMARY KEY,
  state text NOT NULL CHECK (state IN ('claimed', 'completed', 'unknown')),
  token uuid NOT NULL,
  fingerprint text NOT NULL,
  namespace text NOT NULL,
  activity_type text NOT NULL,
  workflow_id text,
  run_id text,
  activity_id text NOT NULL,
  attempt integer NOT NULL,
  claimed_by text NOT NULL,
  claimed_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  result_payload jsonb,
  outcome_note text,
  CHECK ((state = 'completed') = (result_payload IS NOT NULL))
);

-- Operators look for claims without an outcome first, oldest first.
CREATE INDEX claims_open_idx ON ${schema}.claims (claimed_at) WHERE state <> 'completed';
CREATE INDEX claims_workflow_idx ON ${schema}.claims (workflow_id);
`;
