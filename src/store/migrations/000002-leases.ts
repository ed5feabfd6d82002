/**
 * Owner liveness. Never edit after release: add a new migration instead.
 *
 * `lease_expires_at` is renewed by the owning worker process while the activity
 * runs, from Postgres's clock. Claims from before this migration have no lease
 * and count as owned by a dead worker: refusing them is the safe reading.
 * `awaited` is set by an attempt that waits for the outcome, so only then does
 * recording it pay for a NOTIFY (which serializes committing transactions).
 */
export default (schema: string): string => `
ALTER TABLE ${schema}.claims
  ADD COLUMN lease_expires_at timestamptz,
  ADD COLUMN awaited boolean NOT NULL DEFAULT false;
`;
