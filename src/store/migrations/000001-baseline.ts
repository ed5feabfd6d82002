/**
 * The schema as 1.0 ships it. Never edit after release: add a new migration instead.
 *
 * - `claims`: one row per key, inserted before the call (the claim) and settled
 *   after it (`completed` with its result, `unknown`, or deleted when nothing
 *   happened). `token` is the claiming attempt's; only its holder settles it.
 *   `lease_expires_at` is renewed by the owning worker from Postgres's clock;
 *   `deadline_at` is when the claiming attempt's own time is up (before it, a
 *   lapsed owner may only be paused, so operators need `--force`). `awaited` is
 *   set when a workflow is refused on the key, so only then does recording its
 *   outcome look for workflows to tell. `record_mac`/`secret_id`: the
 *   row's HMAC and the record secret that made it (both null: unsigned).
 *   `call_arguments`: the canonical arguments through the worker's codec, for the
 *   operator who checks the vendor. `audited`: whether an audit ledger records
 *   the call made under the claim (without one, the ledger's silence means nothing). `outcome_note` is safe to show anywhere; its
 *   full text, which may hold user data, is `outcome_detail`, through the codec.
 * - `settings.key_salt`: keys and fingerprints are HMACs under it. Made here, from
 *   Postgres's strong random source, and never changed (a trigger refuses it to
 *   every role but the owner): a new salt would give every call a new key.
 *   `oldest_worker_schema`: the oldest migration a worker may know and still claim
 *   here, checked once by each store (`workersFrom` in ./index.ts).
 * - `waiters`: every workflow refused on a key, so an operator's decision reaches
 *   all of them. A row stays until its workflow is found closed; `signalled_at`
 *   is when it was last told.
 * - `ledger`: the calls that actually went out: a `started` row before the call, a
 *   `finished` row after it, a `reconciled` row when an attempt asked the vendor.
 * - `operator_actions`: who changed which claim, when, why, from what to what;
 *   who and when are stamped by a trigger, never taken from the row.
 * - The ledger, the operator trail and the settings refuse UPDATE, DELETE and
 *   TRUNCATE to every role but the tables' owner (the migrator).
 */
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
  outcome_detail jsonb,
  lease_expires_at timestamptz,
  deadline_at timestamptz,
  awaited boolean NOT NULL DEFAULT false,
  record_mac text,
  secret_id text,
  call_arguments jsonb,
  audited boolean NOT NULL DEFAULT false,
  CHECK ((state = 'completed') = (result_payload IS NOT NULL)),
  CHECK ((record_mac IS NULL) = (secret_id IS NULL))
);

-- Operators look for claims without an outcome first, oldest first.
CREATE INDEX claims_open_idx ON ${schema}.claims (claimed_at) WHERE state <> 'completed';
CREATE INDEX claims_workflow_idx ON ${schema}.claims (workflow_id);

CREATE TABLE ${schema}.settings (
  only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  key_salt bytea NOT NULL CHECK (length(key_salt) >= 16),
  oldest_worker_schema integer NOT NULL DEFAULT 1
);
-- Two version-4 UUIDs: 244 bits from pg_strong_random, with nothing to install.
INSERT INTO ${schema}.settings (key_salt) VALUES (uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()));

CREATE TABLE ${schema}.waiters (
  key text NOT NULL,
  namespace text NOT NULL,
  workflow_id text NOT NULL,
  run_id text,
  activity_type text NOT NULL,
  refused_at timestamptz NOT NULL DEFAULT now(),
  signalled_at timestamptz,
  PRIMARY KEY (key, namespace, workflow_id)
);

CREATE TABLE ${schema}.ledger (
  id bigserial PRIMARY KEY,
  call_id uuid NOT NULL,
  event text NOT NULL CHECK (event IN ('started', 'finished', 'reconciled')),
  key text NOT NULL,
  activity_type text NOT NULL,
  workflow_id text,
  run_id text,
  activity_id text NOT NULL,
  attempt integer NOT NULL,
  worker text NOT NULL,
  at timestamptz NOT NULL DEFAULT now(),
  outcome text CHECK (outcome IN ('completed', 'failed', 'outcome-unknown', 'async', 'happened', 'not-happened', 'unknown')),
  error_message text,
  error_class text,
  error_detail jsonb,
  CHECK ((event = 'started') = (outcome IS NULL)),
  UNIQUE (call_id, event)
);
CREATE INDEX ledger_key_idx ON ${schema}.ledger (key);

-- One row per call, as people read it: started, finished (null while running or after a crash).
CREATE VIEW ${schema}.ledger_calls AS
SELECT
  started.call_id, started.key, started.activity_type, started.workflow_id, started.run_id,
  started.activity_id, started.attempt, started.worker,
  started.at AS started_at, finished.at AS finished_at, finished.outcome, finished.error_message,
  finished.error_class, finished.error_detail
FROM ${schema}.ledger AS started
LEFT JOIN ${schema}.ledger AS finished
  ON finished.call_id = started.call_id AND finished.event = 'finished'
WHERE started.event = 'started';

CREATE VIEW ${schema}.ledger_reconciliations AS
SELECT call_id, key, activity_type, workflow_id, run_id, activity_id, attempt, worker, at, outcome AS answer, error_class
FROM ${schema}.ledger
WHERE event = 'reconciled';

CREATE TABLE ${schema}.operator_actions (
  id bigserial PRIMARY KEY,
  at timestamptz NOT NULL DEFAULT now(),
  database_user text NOT NULL DEFAULT session_user,
  action text NOT NULL,
  key text,
  reason text,
  forced boolean NOT NULL DEFAULT false,
  before_state jsonb,
  after_state jsonb
);
CREATE INDEX operator_actions_key_idx ON ${schema}.operator_actions (key);

CREATE FUNCTION ${schema}.reject_unless_owner() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_user <> (SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = TG_RELID) THEN
    RAISE EXCEPTION '%.% is changed only by its owner: % is refused for role %', TG_TABLE_SCHEMA, TG_TABLE_NAME, TG_OP, current_user
      USING ERRCODE = 'insufficient_privilege',
        HINT = 'Only the role that owns the schema (the migrator) may prune the ledger or change the settings.';
  END IF;
  RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END
$$;

CREATE TRIGGER ledger_append_only BEFORE UPDATE OR DELETE ON ${schema}.ledger
  FOR EACH ROW EXECUTE FUNCTION ${schema}.reject_unless_owner();
CREATE TRIGGER ledger_no_truncate BEFORE TRUNCATE ON ${schema}.ledger
  FOR EACH STATEMENT EXECUTE FUNCTION ${schema}.reject_unless_owner();
CREATE TRIGGER operator_actions_append_only BEFORE UPDATE OR DELETE ON ${schema}.operator_actions
  FOR EACH ROW EXECUTE FUNCTION ${schema}.reject_unless_owner();
CREATE TRIGGER operator_actions_no_truncate BEFORE TRUNCATE ON ${schema}.operator_actions
  FOR EACH STATEMENT EXECUTE FUNCTION ${schema}.reject_unless_owner();
CREATE TRIGGER settings_fixed BEFORE UPDATE OR DELETE ON ${schema}.settings
  FOR EACH ROW EXECUTE FUNCTION ${schema}.reject_unless_owner();
CREATE TRIGGER settings_no_truncate BEFORE TRUNCATE ON ${schema}.settings
  FOR EACH STATEMENT EXECUTE FUNCTION ${schema}.reject_unless_owner();

-- Who and when are the database's word, not the row's: the operator role may INSERT, and a row in a
-- colleague's name, or backdated, would make the trail lie about who decided.
CREATE FUNCTION ${schema}.stamp_operator_action() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.database_user := session_user;
  NEW.at := now();
  RETURN NEW;
END
$$;
CREATE TRIGGER operator_actions_stamped BEFORE INSERT ON ${schema}.operator_actions
  FOR EACH ROW EXECUTE FUNCTION ${schema}.stamp_operator_action();
`;
