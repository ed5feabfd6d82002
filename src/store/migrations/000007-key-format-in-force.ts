/**
 * The key format in force, and which workers may claim, decided in one place.
 * Never edit after release: add a new migration instead.
 *
 * `settings.key_format`/`secret_id`: which format every new claim is keyed in
 * (1: sha256; 2: an HMAC under the secret with that id). `temporal-idempotency
 * keys activate` moves it, once every worker has the new secret.
 *
 * `settings.oldest_worker_schema`: the oldest schema version a worker may know
 * and still claim. A schema is shared by every worker of a deployment, and
 * during a rollout (or after a rollback, or when an old worker restarts) not
 * all of them run the release that migrated it. Later migrations are additive
 * where they can be, and each says which workers keep working on it
 * (`workersFrom` in ./index.ts). Every claim carries the version its worker
 * knows (`claims.worker_schema`).
 *
 * `settings.retired_secret_ids`: secrets rotated away from (`keys retire`):
 * a row they signed is refused, though workers keep them to find old keys.
 *
 * `claims.secret_id`: the secret whose HMAC `record_mac` is (and, for format 2,
 * which keyed the key).
 *
 * The trigger admits a claim (an insert, or a takeover: `UPDATE OF token`)
 * only from a worker recent enough (else SQLSTATE TI002: it fails retryably
 * until an upgraded worker takes it) and, on insert, only in the key format in
 * force (else TI001: the worker learns the format changed, and claims again in
 * the one in force). It takes a shared advisory lock first; what changes the
 * rules (an activation, a migration that raises the bar) takes it exclusively,
 * so it waits for every claim in flight and, once it commits, no claim under
 * the old rules can appear. Under READ COMMITTED (the default) the trigger's
 * read of the settings takes a snapshot after the lock; under REPEATABLE READ
 * or SERIALIZABLE the transaction's snapshot predates the wait, so there it
 * locks the settings row (FOR SHARE), which fails with a serialization error
 * (40001) if the row changed since: the claim is not made, and the worker
 * derives its keys again. (The lock is not taken under READ COMMITTED: it
 * would make every claim write to the settings row.)
 */
export default (schema: string): string => `
CREATE TABLE ${schema}.settings (
  only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  key_format smallint NOT NULL DEFAULT 1 CHECK (key_format IN (1, 2)),
  secret_id text,
  activated_at timestamptz,
  activated_by text,
  oldest_worker_schema integer NOT NULL DEFAULT 7,
  retired_secret_ids text[] NOT NULL DEFAULT '{}',
  CHECK ((key_format = 2) = (secret_id IS NOT NULL))
);
INSERT INTO ${schema}.settings DEFAULT VALUES;

ALTER TABLE ${schema}.claims
  ADD COLUMN secret_id text,
  ADD COLUMN worker_schema integer;

CREATE FUNCTION ${schema}.admit_claim() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  in_force record;
BEGIN
  PERFORM pg_advisory_xact_lock_shared(8273181, hashtext(TG_TABLE_SCHEMA || '/key-format'));
  IF current_setting('transaction_isolation') = 'read committed' THEN
    SELECT key_format, secret_id, oldest_worker_schema INTO in_force FROM ${schema}.settings;
  ELSE
    SELECT key_format, secret_id, oldest_worker_schema INTO in_force FROM ${schema}.settings FOR SHARE;
  END IF;
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
