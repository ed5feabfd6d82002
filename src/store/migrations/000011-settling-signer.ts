/**
 * Whether an outcome's signer is a retired secret, asked by the statements that
 * settle a claim (complete, mark-unknown, hand-back). Never edit after release:
 * add a new migration instead.
 *
 * A statement's own snapshot cannot tell: `keys retire` signs the rows again and
 * records the retirement in one transaction, under the claim admission lock,
 * and an outcome written while it runs would carry the retired signature past
 * it, to be refused by every worker. So this function first takes the admission
 * lock shared, as the trigger that admits claims does (it waits for a retirement
 * in progress), and then reads the settings: under READ COMMITTED in a snapshot
 * of its own (VOLATILE), under REPEATABLE READ or SERIALIZABLE with the row
 * locked FOR SHARE, which fails the statement (40001, nothing written) when a
 * retirement committed after its snapshot. The store then signs anew.
 *
 * Both this function and the trigger (migration 7, which also locks the settings
 * FOR SHARE outside READ COMMITTED) run as their owner, the migrator: locking a
 * row needs the UPDATE grant the worker role does not have, so a worker role at
 * REPEATABLE READ could claim nothing. They only read the settings and raise;
 * their search_path is fixed, so the caller cannot redirect what they call.
 *
 * EXECUTE is granted to PUBLIC explicitly, not left to the database's default privileges: every
 * outcome a worker writes asks this function, so a worker role without EXECUTE could claim (a
 * trigger needs no grant) and make the call, then record nothing. Granted only by name, a worker
 * whose grants were given before this migration (a DBA who ran the printed grants once) would lose
 * every record; so would any database that revokes EXECUTE from PUBLIC by default. What PUBLIC gains
 * is little: only roles with USAGE on the schema reach it, and it only tells whether a secret id is
 * retired (the worker reads the settings anyway). roles.ts grants it to the worker by name too, and
 * the store checks before its first claim that it may run it (worker-privileges.ts).
 *
 * Additive: workers that know migration 7 keep working (they do not call it).
 */
export default (schema: string): string => {
  // The admission lock is keyed with the schema's name unquoted, as the trigger's TG_TABLE_SCHEMA gives it.
  const lockKey = `${unquoted(schema)}/key-format`.replaceAll("'", "''");
  return `
CREATE FUNCTION ${schema}.signed_by_retired(signer text) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  retired text[];
BEGIN
  IF signer IS NULL THEN
    RETURN false;
  END IF;
  PERFORM pg_advisory_xact_lock_shared(8273181, hashtext('${lockKey}'));
  IF current_setting('transaction_isolation') = 'read committed' THEN
    SELECT retired_secret_ids INTO retired FROM ${schema}.settings;
  ELSE
    SELECT retired_secret_ids INTO retired FROM ${schema}.settings FOR SHARE;
  END IF;
  RETURN signer = ANY (retired);
END
$$;

-- Every role that can use the schema may ask, whatever the database's default privileges: see above.
GRANT EXECUTE ON FUNCTION ${schema}.signed_by_retired(text) TO PUBLIC;

ALTER FUNCTION ${schema}.admit_claim() SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
`;
};

function unquoted(schema: string): string {
  return schema.startsWith('"') && schema.endsWith('"') ? schema.slice(1, -1).replaceAll('""', '"') : schema;
}
