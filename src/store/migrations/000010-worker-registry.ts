/**
 * Which workers are running, and which secrets they hold. Never edit after
 * release: add a new migration instead.
 *
 * Each store notes its worker (the identity claims carry) at its first claim
 * and then at most once a minute while it claims: the secret ids it knows
 * and the schema version it was built for. `keys activate` reads it, and
 * refuses to put in force a secret that a worker seen lately does not hold:
 * that worker could claim nothing afterwards.
 *
 * Additive: workers that know migration 7 keep working (they are not listed).
 */
export default (schema: string): string => `
CREATE TABLE ${schema}.workers (
  identity text PRIMARY KEY,
  secret_ids text[] NOT NULL,
  worker_schema integer NOT NULL,
  seen_at timestamptz NOT NULL DEFAULT now()
);
`;
