/**
 * Attempt deadlines and the workflows waiting on a key. Never edit after release:
 * add a new migration instead.
 *
 * `deadline_at` is when the claiming attempt's own time is up (its start-to-close
 * timeout plus a grace, from Postgres's clock). Before it, an owner whose lease
 * lapsed may only be paused (a GC pause, cut off from Postgres but not from the
 * vendor) and still calling, so operators need `--force` to release or resolve.
 *
 * `waiters` lists every workflow refused on a key, so an operator's decision
 * reaches all of them, not only the one that made the claim. A row stays until
 * its workflow is found closed (a signal may be lost, and `resume` must still
 * reach it); `signalled_at` is when it was last told, and `prune` keeps the
 * record of a key whose waiters were never told, or told recently.
 */
export default (schema: string): string => `
ALTER TABLE ${schema}.claims ADD COLUMN deadline_at timestamptz;

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
`;
