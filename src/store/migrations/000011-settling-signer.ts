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
 * in progress), and then reads the settings in a snapshot of its own (VOLATILE,
 * so under READ COMMITTED it sees what that retirement committed).
 *
 * Executable by every role, as new functions are: it reads only `settings`,
 * under the caller's own privileges, so a worker role granted before this
 * migration keeps settling claims.
 *
 * Additive: workers that know migration 7 keep working (they do not call it).
 */
export default (schema: string): string => {
  // The admission lock is keyed with the schema's name unquoted, as the trigger's TG_TABLE_SCHEMA gives it.
  const lockKey = `${unquoted(schema)}/key-format`.replaceAll("'", "''");
  return `
CREATE FUNCTION ${schema}.signed_by_retired(signer text) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF signer IS NULL THEN
    RETURN false;
  END IF;
  PERFORM pg_advisory_xact_lock_shared(8273181, hashtext('${lockKey}'));
  RETURN EXISTS (SELECT 1 FROM ${schema}.settings WHERE signer = ANY (retired_secret_ids));
END
$$;
`;
};

function unquoted(schema: string): string {
  return schema.startsWith('"') && schema.endsWith('"') ? schema.slice(1, -1).replaceAll('""', '"') : schema;
}
