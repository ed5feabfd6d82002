/**
 * Every statement on `<schema>.operator_actions`: who changed which claim, when, why, from what to
 * what. Appended in the change's own transaction; who and when are stamped by a trigger.
 */

export type OperatorTrailSql = ReturnType<typeof operatorTrailSql>;

export function operatorTrailSql(schema: string) {
  const trail = `${schema}.operator_actions`;
  return {
    append: `
INSERT INTO ${trail} (action, key, reason, forced, before_state, after_state)
VALUES ($1, $2, $3, $4, $5, $6)`,

    // The trail of key $1, oldest first: its own entries and the prunes that list it.
    of: `
SELECT at, database_user AS "databaseUser", action, key, reason, forced, before_state AS before, after_state AS after
FROM ${trail}
WHERE key = $1 OR (action = 'prune' AND key IS NULL AND after_state -> 'keys' ? $1)
ORDER BY id`,

    // Whether an operator released key $1: only then does a missing row mean "released".
    released: `SELECT 1 FROM ${trail} WHERE key = $1 AND action = 'release' LIMIT 1`,
  };
}
