/** Output for people (aligned tables) and for scripts (`--json`). */
import type { Payload } from '@temporalio/common';
import type { Claim, ClaimSummary, LedgerEntry, PruneSummary } from '../store/index.js';
import { describePayload } from './result-text.js';
import type { ResultCodec } from '../worker/result-codec.js';
import { durationText } from './duration.js';
import { terminalText } from './terminal-text.js';

export type Row = Record<string, unknown>;

/**
 * Prints rows as they arrive, a page at a time, so memory holds one page however many rows there
 * are: `--json` as one JSON array (the same text as `JSON.stringify(rows, null, 2)`), else a table
 * whose column widths come from the first page (a longer cell later only widens its own line).
 * Stops reading pages once stdout is closed (`| head`).
 */
export async function printRowPages(pages: AsyncIterable<readonly Row[]>, columns: readonly string[], json: boolean): Promise<void> {
  let started = false;
  let widths: number[] = [];
  for await (const page of pages) {
    if (page.length === 0) continue;
    if (json) {
      const items = page.map((row) => JSON.stringify(row, null, 2).replace(/^/gm, '  '));
      await write(`${started ? ',\n' : '[\n'}${items.join(',\n')}`);
    } else {
      const cells = page.map((row) => columns.map((column) => cellText(row[column])));
      if (!started) widths = columns.map((column, i) => Math.max(column.length, ...cells.map((values) => values[i]!.length)));
      const line = (values: readonly string[]) => values.map((value, i) => value.padEnd(widths[i]!)).join('  ').trimEnd();
      await write(`${started ? '' : `${line(columns)}\n`}${cells.map(line).join('\n')}\n`);
    }
    started = true;
    if (process.stdout.destroyed) return;
  }
  if (json) await write(started ? '\n]\n' : '[]\n');
  else if (!started) await write('(none)\n');
}

/** Writes to stdout, waiting while its buffer is full; a closed stdout (EPIPE) is not an error here. */
async function write(text: string): Promise<void> {
  if (process.stdout.destroyed) return;
  if (process.stdout.write(text)) return;
  await new Promise<void>((resolve) => {
    const done = () => {
      process.stdout.off('drain', done).off('close', done).off('error', done);
      resolve();
    };
    process.stdout.on('drain', done).on('close', done).on('error', done);
  });
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

export function ledgerRow(entry: LedgerEntry): Row {
  return {
    key: entry.key,
    activity_type: entry.activityType,
    workflow_id: entry.workflowId,
    attempt: entry.attempt,
    worker: entry.worker,
    started_at: entry.startedAt,
    finished_at: entry.finishedAt,
    outcome: entry.outcome,
    error_message: entry.errorMessage,
  };
}

export async function* mapPages<T>(pages: AsyncIterable<readonly T[]>, toRow: (item: T) => Row): AsyncGenerator<Row[]> {
  for await (const page of pages) yield page.map(toRow);
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

/** What `prune` is about to do, and why that horizon. */
export interface PrunePlan {
  readonly summary: PruneSummary;
  readonly horizonMs: number;
  readonly horizonFrom: string;
  /** Each namespace's workflow execution retention (ms), or null when Temporal could not be asked. */
  readonly namespaceRetention: ReadonlyMap<string, number> | null;
  readonly vendorKeyWindowMs: number | null;
  /** Where Temporal was asked, or why it was not. */
  readonly temporal: string;
  /** Completed claims past the horizon kept because their workflow still runs or closed within it. */
  readonly keptForWorkflows: number;
  /** --ledger-older-than, or null: the ledger is left alone. */
  readonly ledgerHorizonMs: number | null;
}

/**
 * What `prune` deletes. `--json` gives the same fields whether or not it is a dry run: `pruned` and
 * `ledger_pruned` (the counts deleted, or that a dry run would delete; `ledger_pruned` null without
 * --ledger-older-than) and `dry_run`. The table leads with `would_prune` or `pruning`, printed before
 * the deletion, and a real run adds `pruned` after it.
 */
export function pruneRecord(
  plan: PrunePlan,
  run: { readonly dryRun: boolean; readonly pruned?: number; readonly ledgerPruned: number | null },
  json: boolean,
): Row {
  const { summary } = plan;
  const retention = plan.namespaceRetention && Object.fromEntries([...plan.namespaceRetention].map(([ns, ms]) => [ns, durationText(ms)]));
  const details = {
    horizon: durationText(plan.horizonMs),
    horizon_from: plan.horizonFrom,
    namespace_retention: retention,
    vendor_key_window: plan.vendorKeyWindowMs === null ? null : durationText(plan.vendorKeyWindowMs),
    temporal: plan.temporal,
    kept_for_workflows: plan.keptForWorkflows,
    oldest_finished_at: summary.oldestFinishedAt,
    newest_finished_at: summary.newestFinishedAt,
    by_activity_type: summary.byActivityType,
  };
  const ledgerHorizon = plan.ledgerHorizonMs === null ? null : durationText(plan.ledgerHorizonMs);
  if (json) return { dry_run: run.dryRun, pruned: run.pruned, ...details, ledger_horizon: ledgerHorizon, ledger_pruned: run.ledgerPruned };
  const ledger = ledgerHorizon === null ? {} : { ledger_horizon: ledgerHorizon, [run.dryRun ? 'would_prune_ledger_entries' : 'pruning_ledger_entries']: run.ledgerPruned };
  return { [run.dryRun ? 'would_prune' : 'pruning']: summary.count, ...details, ...ledger };
}

function cellText(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (value instanceof Date) return value.toISOString();
  return terminalText(typeof value === 'object' ? JSON.stringify(value) : String(value));
}

/**
 * The arguments recorded with a claim, as the operator who checks the vendor needs them, and
 * whether they are what the claim's fingerprint was made from (rows edited in the table are not).
 */
export async function argumentsDetail(
  payload: Payload | null,
  matches: (argsText: string) => Promise<boolean>,
  codec: ResultCodec,
): Promise<Row> {
  if (!payload) return { arguments: '(not recorded)', arguments_check: null };
  const decoded = await codec.decode(payload).catch(() => undefined);
  if (typeof decoded !== 'string') return { arguments: await describePayload(payload, codec), arguments_check: 'not checked: not decoded' };
  return {
    arguments: parsedOr(decoded),
    arguments_check: (await matches(decoded))
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
