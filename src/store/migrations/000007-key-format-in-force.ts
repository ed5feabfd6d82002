/**
 * The key format in force, decided in one place. Never edit after release:
 * add a new migration instead.
 *
 * `settings.key_format`/`secret_id`: which format every new claim is keyed in
 * (1: sha256; 2: an HMAC under the secret with that id). `temporal-idempotency
 * keys activate` moves it, once every worker has the new secret.
 *
 * A trigger refuses a claim keyed in another format (SQLSTATE TI001: the worker
 * learns the format changed, and claims again in the one in force). It takes a
 * shared advisory lock first, and reads the setting with a fresh snapshot, so
 * the activation, which takes the lock exclusively, waits for every claim in
 * flight: once it commits, no claim under the previous format can appear, and
 * looking one up before claiming under the new format cannot race with it.
 *
 * `claims.secret_id`: the secret whose HMAC `record_mac` is (and, for format 2,
 * which keyed the key).
 */
export default (schema: string): string => `
CREATE TABLE ${schema}.settings (
  only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  key_format smallint NOT NULL DEFAULT 1 CHECK (key_format IN (1, 2)),
  secret_id text,
  activated_at timestamptz,
  activated_by text,
  CHECK ((key_format = 2) = (secret_id IS NOT NULL))
);
INSERT INTO ${schema}.settings DEFAULT VALUES;

ALTER TABLE ${schema}.claims ADD COLUMN secret_id text;

CREATE FUNCTION ${schema}.claim_in_key_format_in_force() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  in_force record;
BEGIN
  PERFORM pg_advisory_xact_lock_shared(8273181, hashtext(TG_TABLE_SCHEMA || '/key-format'));
  SELECT key_format, secret_id INTO in_force FROM ${schema}.settings;
  IF NEW.key_format IS DISTINCT FROM in_force.key_format
     OR (in_force.key_format = 2 AND NEW.secret_id IS DISTINCT FROM in_force.secret_id) THEN
    RAISE EXCEPTION 'key format % (secret %) is not the one in force: % (secret %)',
      NEW.key_format, NEW.secret_id, in_force.key_format, in_force.secret_id
      USING ERRCODE = 'TI001';
  END IF;
  RETURN NEW;
END
$$;

CREATE TRIGGER claims_in_key_format_in_force BEFORE INSERT ON ${schema}.claims
  FOR EACH ROW EXECUTE FUNCTION ${schema}.claim_in_key_format_in_force();
`;
