/**
 * How a claim row is read: the explicit column list (never `*`, so a prepared
 * statement keeps its result type when a later migration adds a column) and
 * its mapping to a `Claim`, authenticated on the way.
 */
import type { Claim, ClaimState, KeyFormatId } from './claim-store.js';
import { payloadFromJson } from './payload-json.js';
import type { PayloadJson } from './payload-json.js';
import type { RecordAuthentication, SignedFields } from './record-authentication.js';

export const CLAIM_COLUMNS = `key, state, token, fingerprint, namespace, activity_type, workflow_id, run_id, activity_id,
  attempt, claimed_by, claimed_at, finished_at, result_payload, outcome_note, outcome_detail, lease_expires_at, deadline_at,
  record_mac, secret_id, key_format`;

/** Whether the owner's lease holds, by the database's clock: the one definition every read uses. */
export const OWNER_ALIVE = 'coalesce(lease_expires_at > now(), false)';

/** What every read of a claim selects: its columns, `owner_alive` and the database's clock. */
export const CLAIM_READ = `${CLAIM_COLUMNS}, ${OWNER_ALIVE} AS owner_alive, now() AS read_at`;

/**
 * The key format in force, read by the same statement (one snapshot) as the row it judges: a row
 * written after an activation is judged by the format that activation put in force, never by a
 * worker's earlier read. `settings` is the already-quoted table.
 */
export function inForceColumns(settings: string): string {
  return `(SELECT key_format FROM ${settings}) AS in_force_key_format, (SELECT secret_id FROM ${settings}) AS in_force_secret_id`;
}

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
  key_format: 1 | 2;
  owner_alive: boolean;
  read_at: Date;
  /** Present when the statement read the format in force with the row (`inForceColumns`). */
  in_force_key_format?: 1 | 2;
  in_force_secret_id?: string | null;
}

/** The format in force as the row's own statement read it, if it did. */
export function inForceOf(row: ClaimRow): KeyFormatId | undefined {
  if (row.in_force_key_format === undefined) return undefined;
  return { version: row.in_force_key_format, secretId: row.in_force_secret_id ?? null };
}

export function toClaim(row: ClaimRow, authentication: RecordAuthentication, inForce: KeyFormatId): Claim {
  return {
    key: row.key,
    state: row.state,
    token: row.token,
    fingerprint: row.fingerprint,
    keyFormat: { version: row.key_format, secretId: row.key_format === 2 ? row.secret_id : null },
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
    authenticity: authentication.check(signedFieldsOf(row), { mac: row.record_mac, secretId: row.secret_id }, inForce),
  };
}

/** What a row's MAC covers, read from the row. */
export function signedFieldsOf(row: ClaimRow): SignedFields {
  return {
    namespace: row.namespace,
    key: row.key,
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
