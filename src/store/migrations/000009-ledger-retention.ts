/**
 * Pruning the ledger, which is append-only for every role but its owner. Never
 * edit after release: add a new migration instead.
 *
 * `prune_ledger(older_than, reason, dry_run)` runs as the schema's owner
 * (SECURITY DEFINER), so the operator role may call it without being able to
 * delete ledger rows itself, and it can only do what retention needs: delete
 * whole calls (started, finished and reconciled rows) whose last entry is
 * older than `older_than`, never one under a day old, never one any of whose keys
 * still has a claim without an outcome (the runbook needs those), and it
 * appends what it did to the operator trail. Returns the rows it deletes (or,
 * with `dry_run`, would).
 *
 * Additive: workers that know migration 7 keep working.
 */
export default (schema: string): string => `
CREATE FUNCTION ${schema}.ledger_prunable_calls(older_than interval) RETURNS TABLE (call_id uuid)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
  SELECT entry.call_id
  FROM ${schema}.ledger AS entry
  GROUP BY entry.call_id
  HAVING max(entry.at) < now() - older_than
    -- Every key the call's entries name, not one: the worker role writes the entries, and one under
    -- another key must not make a call whose claim has no outcome look settled.
    AND NOT EXISTS (
      SELECT 1 FROM ${schema}.claims AS claim
      WHERE claim.key = ANY (array_agg(entry.key)) AND claim.state <> 'completed')
$$;
REVOKE ALL ON FUNCTION ${schema}.ledger_prunable_calls(interval) FROM PUBLIC;

CREATE FUNCTION ${schema}.prune_ledger(older_than interval, reason text, dry_run boolean) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  pruned bigint;
BEGIN
  -- The cutoff itself is checked, not the interval: intervals compare a month as 30 days, but now() - older_than
  -- subtracts calendar months, so '-12 mons +361 days' compares as a day yet cuts off days in the future.
  IF older_than IS NULL OR now() - older_than > now() - interval '24 hours' THEN
    RAISE EXCEPTION 'the ledger keeps every call for at least a day: % is shorter', older_than
      USING ERRCODE = 'TI003';
  END IF;
  IF dry_run IS NOT FALSE THEN -- NULL counts, deletes nothing
    SELECT count(*) INTO pruned FROM ${schema}.ledger
    WHERE call_id IN (SELECT call_id FROM ${schema}.ledger_prunable_calls(older_than));
  ELSE
    DELETE FROM ${schema}.ledger
    WHERE call_id IN (SELECT call_id FROM ${schema}.ledger_prunable_calls(older_than));
    GET DIAGNOSTICS pruned = ROW_COUNT;
    INSERT INTO ${schema}.operator_actions (action, reason, after_state)
    VALUES ('prune-ledger', reason, jsonb_build_object('older_than', justify_hours(older_than)::text, 'pruned_entries', pruned));
  END IF;
  RETURN pruned;
END
$$;

REVOKE ALL ON FUNCTION ${schema}.prune_ledger(interval, text, boolean) FROM PUBLIC;
`;
