/**
 * `temporal-idempotency`: operate the claims after a refusal.
 * Connects with DATABASE_URL or the PG* variables; signals workflows at TEMPORAL_ADDRESS.
 * Exit codes: see EXIT in ./errors.ts and `temporal-idempotency --help`.
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { DEFAULT_SCHEMA, InvalidIdentifierError, migrate } from '../store/index.js';
import { ClaimAdmin, describeResult } from './claim-admin.js';
import type { ClaimRow } from '../store/claim-row.js';
import { parseDuration } from './duration.js';
import { CliError, EXIT } from './errors.js';
import { printRecord, printRows } from './output.js';
import { signalDecision } from './signal-workflow.js';

const HELP = `Usage: temporal-idempotency <command> [options]

Commands:
  migrate                               create or upgrade the schema
  list [--state S] [--workflow ID] [--activity TYPE] [--older-than 1h] [--limit N]
                                        claims, those without an outcome first (S: claimed, unknown, completed, open)
  show KEY                              one claim, with its recorded result
  resolve KEY --result JSON [--force]   it happened: record JSON as its result; later attempts return it
  release KEY [--force]                 it did not happen: delete the claim; the next attempt runs it
  prune --older-than 7d [--dry-run]     delete completed claims finished before then (never open ones)
  ledger [--key KEY] [--workflow ID] [--limit N]
                                        calls that went out, newest first

Options:
  --schema NAME      Postgres schema (default: $IDEMPOTENCY_SCHEMA or ${DEFAULT_SCHEMA})
  --json             machine-readable output
  --force            resolve or release a claim whose owner still holds a live lease
  --no-signal        after resolve or release, do not signal the waiting workflow
  --workflow-id ID   the workflow to signal (default: the one in the claim)

Environment: DATABASE_URL or PGHOST/PGPORT/PGUSER/PGPASSWORD/PGDATABASE; TEMPORAL_ADDRESS (default
localhost:7233) and TEMPORAL_NAMESPACE for the signal.

Exit codes: 0 ok, 1 unexpected failure, 2 bad usage or input, 3 no such key,
4 the claim's state does not allow it, 5 database unreachable.`;

const LIST_COLUMNS = ['key', 'state', 'activity_type', 'workflow_id', 'attempt', 'claimed_by', 'claimed_at', 'owner_alive'];
const LEDGER_COLUMNS = ['key', 'activity_type', 'workflow_id', 'attempt', 'worker', 'started_at', 'finished_at', 'outcome'];

export async function main(argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseCommandLine(argv);
  const [command, key, ...extra] = positionals;
  if (values.help || !command) {
    console.log(HELP);
    return values.help ? EXIT.ok : EXIT.usage;
  }
  if (extra.length > 0) throw new CliError(`Unexpected arguments: ${extra.join(' ')}. See --help.`, EXIT.usage);

  const schema = values.schema ?? process.env['IDEMPOTENCY_SCHEMA'] ?? DEFAULT_SCHEMA;
  const pool = new pg.Pool({ connectionString: process.env['DATABASE_URL'], connectionTimeoutMillis: 5_000, max: 2 });
  pool.on('error', () => undefined);
  try {
    const admin = new ClaimAdmin(pool, schema);
    const json = values.json ?? false;
    switch (command) {
      case 'migrate': {
        const report = await migrate(pool, { schema });
        printRecord({ schema: report.schema, applied: report.applied.join(', ') || 'none (already current)', latest: report.latest }, json);
        return EXIT.ok;
      }
      case 'list': {
        const rows = await admin.list({
          state: values.state,
          workflowId: values.workflow,
          activityType: values.activity,
          olderThanMs: parseDuration('--older-than', values['older-than']),
          limit: parseLimit(values.limit),
        });
        printRows(rows.map(summary), LIST_COLUMNS, json);
        return EXIT.ok;
      }
      case 'show':
        printRecord(detail(await admin.show(requireKey(command, key))), json);
        return EXIT.ok;
      case 'resolve': {
        const claimKey = requireKey(command, key);
        const claim = await admin.resolve(claimKey, parseResult(values.result), { force: values.force ?? false });
        printRecord(detail(claim), json);
        await signalAfter(claim, 'resolved', values);
        return EXIT.ok;
      }
      case 'release': {
        const claim = await admin.release(requireKey(command, key), { force: values.force ?? false });
        printRecord({ ...summary(claim), state: 'released' }, json);
        await signalAfter(claim, 'released', values);
        return EXIT.ok;
      }
      case 'prune': {
        const olderThanMs = parseDuration('--older-than', values['older-than']);
        if (olderThanMs === undefined) throw new CliError('prune needs --older-than, e.g. --older-than 7d.', EXIT.usage);
        const count = await admin.prune(olderThanMs, { dryRun: values['dry-run'] ?? false });
        printRecord({ [values['dry-run'] ? 'would_prune' : 'pruned']: count }, json);
        return EXIT.ok;
      }
      case 'ledger':
        printRows(await admin.ledger({ key: values.key, workflowId: values.workflow, limit: parseLimit(values.limit) }), LEDGER_COLUMNS, json);
        return EXIT.ok;
      default:
        throw new CliError(`Unknown command ${JSON.stringify(command)}. See --help.`, EXIT.usage);
    }
  } finally {
    await pool.end();
  }
}

function parseCommandLine(argv: readonly string[]) {
  try {
    return parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        schema: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        state: { type: 'string' },
        workflow: { type: 'string' },
        activity: { type: 'string' },
        'older-than': { type: 'string' },
        limit: { type: 'string' },
        result: { type: 'string' },
        force: { type: 'boolean' },
        'no-signal': { type: 'boolean' },
        'workflow-id': { type: 'string' },
        'dry-run': { type: 'boolean' },
        key: { type: 'string' },
      },
    });
  } catch (error) {
    throw new CliError(`${(error as Error).message}. See --help.`, EXIT.usage);
  }
}

type Flags = ReturnType<typeof parseCommandLine>['values'];

function requireKey(command: string, key: string | undefined): string {
  if (!key) throw new CliError(`${command} needs a KEY (a claim's key, as in a refusal's details or \`list\`).`, EXIT.usage);
  return key;
}

function parseResult(text: string | undefined): unknown {
  if (text === undefined) throw new CliError('resolve needs --result JSON: what the call returned, e.g. --result \'{"id":"ch_1"}\'.', EXIT.usage);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new CliError(`--result is not valid JSON (${(error as Error).message}); nothing was changed.`, EXIT.usage);
  }
}

function parseLimit(text: string | undefined): number {
  if (text === undefined) return 50;
  const limit = Number(text);
  if (!Number.isInteger(limit) || limit <= 0) throw new CliError(`--limit ${JSON.stringify(text)} is not a positive integer.`, EXIT.usage);
  return limit;
}

async function signalAfter(claim: ClaimRow, decision: 'resolved' | 'released', values: Flags): Promise<void> {
  const workflowId = values['workflow-id'] ?? claim.workflow_id;
  if (values['no-signal'] || !workflowId) return;
  try {
    await signalDecision({ workflowId, namespace: claim.namespace }, { key: claim.key, decision });
    console.error(`Signalled workflow ${workflowId}: ${decision}.`);
  } catch (error) {
    console.error(
      `The claim is ${decision}, but signalling workflow ${workflowId} failed (${(error as Error).message}). ` +
        `If it waits in resumable(), signal it yourself; otherwise reset or retry it.`,
    );
  }
}

function summary(claim: ClaimRow) {
  return {
    key: claim.key,
    state: claim.state,
    activity_type: claim.activity_type,
    workflow_id: claim.workflow_id,
    attempt: claim.attempt,
    claimed_by: claim.claimed_by,
    claimed_at: claim.claimed_at,
    owner_alive: claim.state === 'claimed' ? claim.owner_alive : null,
  };
}

function detail(claim: ClaimRow) {
  return {
    ...summary(claim),
    namespace: claim.namespace,
    run_id: claim.run_id,
    activity_id: claim.activity_id,
    lease_expires_at: claim.lease_expires_at,
    finished_at: claim.finished_at,
    outcome_note: claim.outcome_note,
    result: describeResult(claim.result_payload),
  };
}

/** The exit code for an error thrown by main(), and the line to print for it. */
export function failureOf(error: unknown): { code: number; message: string } {
  if (error instanceof CliError) return { code: error.exitCode, message: error.message };
  if (error instanceof InvalidIdentifierError) return { code: EXIT.usage, message: error.message };
  const code = (error as { code?: string }).code ?? '';
  const message = error instanceof Error ? error.message : String(error);
  if (/^(ECONNREFUSED|ENOTFOUND|ETIMEDOUT|EAI_AGAIN|08|57P0)/.test(code) || /timeout exceeded when trying to connect/.test(message)) {
    return { code: EXIT.unavailable, message: `Cannot reach the database (${code || message}). Check DATABASE_URL or PG*.` };
  }
  return { code: EXIT.failure, message };
}
