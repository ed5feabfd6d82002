/**
 * How a claim row is read: the explicit column list (never `*`, so a prepared
 * statement keeps its result type when a later migration adds a column) and
 * its mapping to a `Claim`, its signature checked on the way.
 */
import type { Claim, ClaimState } from './claim-store.js';
import { payloadFromJson } from './payload-json.js';
import type { PayloadJson } from './payload-json.js';
import type { RecordSigner, SignedFields } from './record-signing.js';

export const CLAIM_COLUMNS = `key, state, token, fingerprint, namespace, activity_type, workflow_id, run_id, activity_id,
  attempt, claimed_by, claimed_at, finished_at, result_payload, outcome_note, outcome_detail, lease_expires_at, deadline_at,
  record_mac, secret_id, audited`;

/** Whether the owner's lease holds, by the database's clock: the one definition every read uses. */
export const OWNER_ALIVE = 'coalesce(lease_expires_at > now(), false)';

/** What every read of a claim selects: its columns, `owner_alive` and the database's clock. */
export const CLAIM_READ = `${CLAIM_COLUMNS}, ${OWNER_ALIVE} AS owner_alive, now() AS read_at`;

/** A row of `<schema>.claims` as Postgres returns it, with `owner_alive` judged by its clock. */
export interface ClaimRow {
  key: string;
  state: ClaimState;
  token: string;
  fingerprint: string;
  namespace: string;
  activity_type: string;
  workflow_id: string | null;
  run_id: string | null;
  activity_id: string;
  attempt: number;
  claimed_by: string;
  claimed_at: Date;
  finished_at: Date | null;
  result_payload: PayloadJson | null;
  outcome_note: string | null;
  outcome_detail: PayloadJson | null;
  lease_expires_at: Date | null;
  deadline_at: Date | null;
  record_mac: string | null;
  secret_id: string | null;
  audited: boolean;
  owner_alive: boolean;
  read_at: Date;
}

export function toClaim(row: ClaimRow, signer: RecordSigner): Claim {
  return {
    key: row.key,
    state: row.state,
    token: row.token,
    fingerprint: row.fingerprint,
    namespace: row.namespace,
    activityType: row.activity_type,
    workflowId: row.workflow_id,
    runId: row.run_id,
    activityId: row.activity_id,
    attempt: row.attempt,
    claimedBy: row.claimed_by,
    claimedAt: row.claimed_at,
    finishedAt: row.finished_at,
    result: row.result_payload ? payloadFromJson(row.result_payload) : null,
    outcomeNote: row.outcome_note,
    outcomeDetail: row.outcome_detail ? payloadFromJson(row.outcome_detail) : null,
    leaseExpiresAt: row.lease_expires_at,
    ownerAlive: row.owner_alive,
    deadlineAt: row.deadline_at,
    readAt: row.read_at,
    authenticity: signer.check(signedFieldsOf(row), { mac: row.record_mac, secretId: row.secret_id }),
    signedBy: row.secret_id,
    audited: row.audited,
  };
}

/** What a row's MAC covers, read from the row. */
export function signedFieldsOf(row: ClaimRow): SignedFields {
  return {
    namespace: row.namespace,
    key: row.key,
    activityType: row.activity_type,
    fingerprint: row.fingerprint,
    state: row.state,
    token: row.token,
    attempt: row.attempt,
    claimedBy: row.claimed_by,
    workflowId: row.workflow_id,
    runId: row.run_id,
    activityId: row.activity_id,
    result: row.result_payload,
    outcomeNote: row.outcome_note,
    outcomeDetail: row.outcome_detail,
  };
}
