/** Output for people (aligned tables) and for scripts (`--json`). */
import type { Payload } from '@temporalio/common';
import type { Claim, ClaimSummary, PruneSummary } from '../store/index.js';
import { describePayload } from './result-text.js';
import type { ResultCodec } from '../worker/result-codec.js';
import { durationText } from './duration.js';

export type Row = Record<string, unknown>;

export function printRows(rows: readonly Row[], columns: readonly string[], json: boolean): void {
  if (json) return void console.log(JSON.stringify(rows, null, 2));
  if (rows.length === 0) return void console.log('(none)');
  const cells = rows.map((row) => columns.map((column) => cellText(row[column])));
  const widths = columns.map((column, i) => Math.max(column.length, ...cells.map((line) => line[i]!.length)));
  const line = (values: readonly string[]) => values.map((value, i) => value.padEnd(widths[i]!)).join('  ').trimEnd();
  console.log(line(columns));
  for (const values of cells) console.log(line(values));
}

export function printRecord(record: Row, json: boolean): void {
  if (json) return void console.log(JSON.stringify(record, null, 2));
  const width = Math.max(...Object.keys(record).map((name) => name.length));
  for (const [name, value] of Object.entries(record)) console.log(`${name.padEnd(width)}  ${cellText(value)}`);
}

export function claimSummaryRow(claim: ClaimSummary | Claim): Row {
  return {
    key: claim.key,
    state: claim.state,
    activity_type: claim.activityType,
    workflow_id: claim.workflowId,
    attempt: claim.attempt,
    claimed_by: claim.claimedBy,
    claimed_at: claim.claimedAt,
    owner_alive: claim.state === 'claimed' ? claim.ownerAlive : null,
  };
}

export async function claimDetail(claim: Claim, codec: ResultCodec): Promise<Row> {
  return {
    ...claimSummaryRow(claim),
    namespace: claim.namespace,
    run_id: claim.runId,
    activity_id: claim.activityId,
    lease_expires_at: claim.leaseExpiresAt,
    deadline_at: claim.deadlineAt,
    finished_at: claim.finishedAt,
    record: claim.authenticity,
    outcome_note: claim.outcomeNote,
    outcome_detail: claim.outcomeDetail ? await describePayload(claim.outcomeDetail, codec) : null,
    result: claim.result ? await describePayload(claim.result, codec) : null,
  };
}

export function pruneRecord(summary: PruneSummary, olderThanMs: number, label: string): Row {
  return {
    [label]: summary.count,
    horizon: durationText(olderThanMs),
    oldest_finished_at: summary.oldestFinishedAt,
    newest_finished_at: summary.newestFinishedAt,
    by_activity_type: summary.byActivityType,
  };
}

function cellText(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/**
 * The arguments recorded with a claim, as the operator who checks the vendor needs them, and
 * whether they are what the claim's fingerprint was made from (rows edited in the table are not).
 */
export async function argumentsDetail(
  payload: Payload | null,
  matches: (argsText: string) => boolean | 'unknown',
  codec: ResultCodec,
): Promise<Row> {
  if (!payload) return { arguments: '(not recorded)', arguments_check: null };
  const decoded = await codec.decode(payload).catch(() => undefined);
  if (typeof decoded !== 'string') return { arguments: await describePayload(payload, codec), arguments_check: 'not checked: not decoded' };
  const match = matches(decoded);
  return {
    arguments: parsedOr(decoded),
    arguments_check:
      match === 'unknown'
        ? "not checked: the claim's key format needs its secret (--worker-config)"
        : match
          ? "match the claim's fingerprint"
          : "DO NOT match the claim's fingerprint: not the arguments it was claimed with (the row was changed)",
  };
}

/** The canonical text is JSON; shown parsed, so `--json` nests it. */
function parsedOr(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
