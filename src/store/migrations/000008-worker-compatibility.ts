/**
 * Which workers may claim on this schema. Never edit after release: add a new
 * migration instead.
 *
 * A schema is shared by every worker of a deployment, and during a rollout (or
 * after a rollback, or when an old worker restarts) not all of them run the
 * release that migrated it. Migrations after this one are additive where they
 * can be, and each says which workers keep working on it (`workersFrom` in
 * ./index.ts): `settings.oldest_worker_schema` is the oldest schema version a
 * worker may know and still claim. Every claim carries the version its worker
 * knows (`claims.worker_schema`); the trigger refuses one from a worker that is
 * too old (SQLSTATE TI002), under the same lock the key format takes, so a
 * migration that raises the bar waits for every claim in flight and, once it
 * commits, no older worker claims again: its activities fail retryably with
 * `SchemaTooNewError` until a current worker takes them.
 *
 * The trigger replaces migration 7's: one read of the settings per claim. It
 * also runs when a claim is taken over (`UPDATE OF token`), which is a claim
 * too, but checks the key format only on insert, as before.
 */
export default (schema: string): string => `
ALTER TABLE ${schema}.settings ADD COLUMN oldest_worker_schema integer NOT NULL DEFAULT 8;
ALTER TABLE ${schema}.claims ADD COLUMN worker_schema integer;

DROP TRIGGER claims_in_key_format_in_force ON ${schema}.claims;
DROP FUNCTION ${schema}.claim_in_key_format_in_force();

CREATE FUNCTION ${schema}.admit_claim() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  in_force record;
BEGIN
  PERFORM pg_advisory_xact_lock_shared(8273181, hashtext(TG_TABLE_SCHEMA || '/key-format'));
  SELECT key_format, secret_id, oldest_worker_schema INTO in_force FROM ${schema}.settings;
  IF NEW.worker_schema IS NULL OR NEW.worker_schema < in_force.oldest_worker_schema THEN
    RAISE EXCEPTION 'a worker that knows schema version % may not claim here: this schema needs workers that know version % or later',
      coalesce(NEW.worker_schema::text, 'unknown'), in_force.oldest_worker_schema
      USING ERRCODE = 'TI002';
  END IF;
  IF TG_OP = 'INSERT' AND (NEW.key_format IS DISTINCT FROM in_force.key_format
     OR (in_force.key_format = 2 AND NEW.secret_id IS DISTINCT FROM in_force.secret_id)) THEN
    RAISE EXCEPTION 'key format % (secret %) is not the one in force: % (secret %)',
      NEW.key_format, NEW.secret_id, in_force.key_format, in_force.secret_id
      USING ERRCODE = 'TI001';
  END IF;
  RETURN NEW;
END
$$;

CREATE TRIGGER claims_admitted BEFORE INSERT OR UPDATE OF token ON ${schema}.claims
  FOR EACH ROW EXECUTE FUNCTION ${schema}.admit_claim();
`;
