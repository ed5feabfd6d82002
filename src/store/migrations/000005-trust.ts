/**
 * Authenticated records, encoded outcome texts, and an append-only ledger and
 * operator trail that the database enforces. Never edit after release: add a
 * new migration instead.
 *
 * - `record_mac`: an HMAC, under the deployment secret, over the row's namespace,
 *   key, fingerprint, state, token and result; null where no secret is configured.
 * - `key_format`: 1 for sha256 keys, 2 for keys keyed with the deployment secret.
 * - `outcome_detail`, `error_detail`: the texts that may hold user data (an error
 *   message with a URL and its api key, say), as payloads through the worker's
 *   codec; `outcome_note` and `error_class` keep only what is safe to show.
 * - `operator_actions`: who changed which claim, when, why, and from what to what;
 *   who and when are stamped by a trigger (session_user, now()), never taken from the row.
 * - Triggers reject UPDATE, DELETE and TRUNCATE on the ledger and the operator
 *   trail for every role but the tables' owner (the migrator), so "append-only"
 *   holds even for a worker role that was granted more than it needs.
 */
export default (schema: string): string => `
ALTER TABLE ${schema}.claims
  ADD COLUMN record_mac text,
  ADD COLUMN key_format smallint NOT NULL DEFAULT 1,
  ADD COLUMN outcome_detail jsonb;

ALTER TABLE ${schema}.ledger
  ADD COLUMN error_class text,
  ADD COLUMN error_detail jsonb;

CREATE OR REPLACE VIEW ${schema}.ledger_calls AS
SELECT
  started.call_id, started.key, started.activity_type, started.workflow_id, started.run_id,
  started.activity_id, started.attempt, started.worker,
  started.at AS started_at, finished.at AS finished_at, finished.outcome, finished.error_message,
  finished.error_class, finished.error_detail
FROM ${schema}.ledger AS started
LEFT JOIN ${schema}.ledger AS finished
  ON finished.call_id = started.call_id AND finished.event = 'finished'
WHERE started.event = 'started';

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
    RAISE EXCEPTION '%.% is append-only: % is refused for role %', TG_TABLE_SCHEMA, TG_TABLE_NAME, TG_OP, current_user
      USING ERRCODE = 'insufficient_privilege',
        HINT = 'Only the role that owns the schema (the migrator) may prune it.';
  END IF;
  RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END
$$;

CREATE TRIGGER ledger_append_only BEFORE UPDATE OR DELETE ON ${schema}.ledger
  FOR EACH ROW EXECUTE FUNCTION ${schema}.reject_unless_owner();
CREATE TRIGGER ledger_no_truncate BEFORE TRUNCATE ON ${schema}.ledger
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
CREATE TRIGGER operator_actions_append_only BEFORE UPDATE OR DELETE ON ${schema}.operator_actions
  FOR EACH ROW EXECUTE FUNCTION ${schema}.reject_unless_owner();
CREATE TRIGGER operator_actions_no_truncate BEFORE TRUNCATE ON ${schema}.operator_actions
  FOR EACH STATEMENT EXECUTE FUNCTION ${schema}.reject_unless_owner();
`;
