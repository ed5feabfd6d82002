/**
 * `temporal-idempotency`: operate the claims after a refusal.
 * Connects with DATABASE_URL or the PG* variables; signals workflows at TEMPORAL_ADDRESS.
 * Exit codes: see EXIT in ./errors.ts and `temporal-idempotency --help`.
 */
import { parseArgs } from 'node:util';
import type pg from 'pg';
import { CLAIM_STATES, ClaimNotFoundError, ClaimOperations, DEFAULT_SCHEMA, changeRefusal, grantScript, migrate, secretIds } from '../store/index.js';
import type { ListFilter, StoreRoles } from '../store/index.js';
import { keyToUuid } from '../key/index.js';
import { DEFAULT_STATEMENT_TIMEOUT_MS, databaseFailure, openDatabase } from './database.js';
import { parseDuration } from './duration.js';
import { CliError, EXIT } from './errors.js';
import { argumentsDetail, claimDetail, claimSummaryRow, mapPages, printRecord, printRowPages } from './output.js';
import { keyOfCall } from './key-command.js';
import type { KeyRequest } from './key-command.js';
import { ledger } from './ledger-command.js';
import { prune } from './prune-command.js';
import { readResult } from './result-input.js';
import { checkResolvedResult } from './resolve-check.js';
import { checkSignalSettings, tellWaiters } from './tell-waiters.js';
import { packageVersion } from './version.js';
import { loadWorkerConfig } from './worker-config.js';
import { refusePlaintextAmongCodecs } from './plaintext-guard.js';
import { terminalText } from './terminal-text.js';
import type { LoadedWorkerConfig } from './worker-config.js';
import { errorMessage } from '../error-text.js';
import { HELP } from './help.js';


const LIST_COLUMNS = ['key', 'state', 'activity_type', 'workflow_id', 'attempt', 'claimed_by', 'claimed_at', 'owner_alive'];
/**
 * Postgres rounds statement_timeout to whole milliseconds, and 0 means no limit; the client's own
 * timer (setTimeout, the timeout plus a grace) holds at most 2^31 - 1 ms and turns anything longer into 1 ms.
 */
const STATEMENT_TIMEOUT_RANGE = { minMs: 1, maxMs: 2 ** 31 - 1 - 60_000 };

type Flags = ReturnType<typeof parseCommandLine>['values'];

export async function main(argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseCommandLine(argv);
  const [command, key, ...extra] = positionals;
  if (values.version) {
    console.log(packageVersion());
    return EXIT.ok;
  }
  if (values.help || !command) {
    console.log(HELP);
    return values.help ? EXIT.ok : EXIT.usage;
  }
  if (values['allow-short']) throw new CliError('--allow-short is now --force: one name for every safety override. Nothing was changed.', EXIT.usage);
  if (extra.length > 0) throw new CliError(`Unexpected arguments: ${extra.join(' ')}. See --help.`, EXIT.usage);

  const schema = values.schema ?? process.env['IDEMPOTENCY_SCHEMA'] ?? DEFAULT_SCHEMA;
  const config = await loadWorkerConfig(values['worker-config'] ?? process.env['TEMPORAL_IDEMPOTENCY_WORKER_CONFIG']);
  const statementTimeoutMs =
    parseDuration('--statement-timeout', values['statement-timeout'], STATEMENT_TIMEOUT_RANGE) ??
    (command === 'migrate' ? undefined : DEFAULT_STATEMENT_TIMEOUT_MS);
  const database = openDatabase(statementTimeoutMs);
  try {
    const trust = { ...(config.secret !== undefined && { secret: config.secret }), ...(config.previousSecrets && { previousSecrets: config.previousSecrets }) };
    const operations = new ClaimOperations(database.pool, { schema, ...trust });
    return await run(command, key, values, operations, database.pool, config);
  } catch (error) {
    throw databaseFailure(error, database) ?? error;
  } finally {
    await database.pool.end();
  }
}

async function run(
  command: string,
  key: string | undefined,
  values: Flags,
  operations: ClaimOperations,
  pool: pg.Pool,
  config: LoadedWorkerConfig,
): Promise<number> {
  const json = values.json ?? false;
  switch (command) {
    case 'migrate': {
      const grantTo = storeRoles(values);
      const report = await migrate(pool, { schema: operations.schema, grantTo });
      printRecord(
        {
          schema: report.schema,
          applied: report.applied.join(', ') || 'none (already current)',
          version: report.version,
          latest_known: report.latest,
          granted:
            [grantTo.worker && `worker: ${grantTo.worker}`, grantTo.operator && `operator: ${grantTo.operator}`].filter(Boolean).join(', ') ||
            'none (no --worker-role or --operator-role given)',
        },
        json,
      );
      return EXIT.ok;
    }
    case 'grants': {
      const roles = storeRoles(values);
      if (!roles.worker && !roles.operator) throw new CliError('grants needs --worker-role, --operator-role or both.', EXIT.usage);
      console.log(grantScript(roles, operations.schema));
      return EXIT.ok;
    }
    case 'list': {
      await printRowPages(mapPages(operations.listPages(listFilter(values)), claimSummaryRow), LIST_COLUMNS, json);
      return EXIT.ok;
    }
    case 'show': {
      const claim = await operations.show(requireKey(command, key)).catch((error: unknown) => absentWithTrail(operations, error));
      printRecord(
        {
          ...(await claimDetail(claim, config.codec)),
          key_uuid: keyToUuid(claim.key),
          ...(await argumentsDetail(await operations.recordedArguments(claim.key), (text) => operations.argumentsMatch(claim, text), config.codec)),
          waiting_workflows: (await operations.waitersOf(claim.key, claim)).map((waiter) => waiter.workflowId),
          operator_actions: await operations.operatorActions(claim.key),
        },
        json,
      );
      return EXIT.ok;
    }
    case 'resolve': {
      const claimKey = requireKey(command, key);
      await refusePlaintextAmongCodecs(operations, claimKey, config.codec, values.plaintext ?? false);
      const value = await readResult(values);
      const claim = await operations.show(claimKey);
      // A change the claim's state refuses is said first (resolve checks it again under the row's lock).
      const change = { force: values.force ?? false, reason: values.reason, distrust: values.distrust };
      const refusal = changeRefusal(claim, 'resolve', change.force, secretIds('--distrust', change.distrust ?? []));
      if (refusal) throw refusal;
      const checkedAgainst = await checkResolvedResult(operations, claim, value, config, change.force);
      const result = await config.codec.encode(value);
      await checkSignalSettings(values);
      const before = await operations.resolve(claimKey, result, change);
      printRecord({ ...(await claimDetail(await operations.show(claimKey), config.codec)), result_checked_against: checkedAgainst }, json);
      return tellWaiters(operations, before, 'resolved', values);
    }
    case 'release': {
      await checkSignalSettings(values);
      const before = await operations.release(requireKey(command, key), { force: values.force ?? false, reason: values.reason, distrust: values.distrust });
      printRecord({ ...(await claimDetail(before, config.codec)), state: 'released' }, json);
      return tellWaiters(operations, before, 'released', values);
    }
    case 'resume': {
      const claimKey = requireKey(command, key);
      const decision = await operations.outcomeFor(claimKey);
      const claim = decision === 'resolved' ? await operations.show(claimKey) : undefined;
      printRecord({ key: claimKey, decision }, json);
      return tellWaiters(operations, claim ?? { key: claimKey }, decision, values);
    }
    case 'release-absent': {
      const claimKey = requireKey(command, key);
      if (!values.reason) throw new CliError('release-absent needs --reason: why you know the call did not happen.', EXIT.usage);
      await checkSignalSettings(values);
      await operations.releaseAbsent(claimKey, { reason: values.reason });
      printRecord({ key: claimKey, decision: 'released' }, json);
      return tellWaiters(operations, { key: claimKey }, 'released', values);
    }
    case 'keys':
      return keys(operations, key, values, json);
    case 'prune':
      return prune(operations, values, json);
    case 'key':
      if (key !== undefined) throw new CliError(`key takes flags only, got ${JSON.stringify(key)}. See --help.`, EXIT.usage);
      return keyOfCall(operations, keyRequest(values), json);
    case 'ledger':
      return ledger(operations, { key: values.key, workflowId: values.workflow, limit: parseLimit(values.limit) }, json);
    default:
      throw new CliError(`Unknown command ${JSON.stringify(command)}. See --help.`, EXIT.usage);
  }
}

async function keys(operations: ClaimOperations, subcommand: string | undefined, values: Flags, json: boolean): Promise<number> {
  if (subcommand === 'status') {
    const signers = await operations.signers();
    const rows = signers.map((row) => ({ secret: row.secretId, rows: row.rows, held_as: row.heldAs }));
    await printRowPages(oneBatch(rows), ['secret', 'rows', 'held_as'], json);
    return EXIT.ok;
  }
  if (subcommand === 're-sign') {
    const report = await operations.resign({ distrust: values.distrust ?? [], reason: values.reason });
    printRecord(
      {
        signed_with: report.signingSecretId,
        resigned_rows: report.resigned,
        rejected_rows: report.rejected,
        unverifiable_rows: report.unverifiable,
        distrusted_rows: report.distrusted,
        changed_meanwhile: report.changedMeanwhile,
      },
      json,
    );
    const left = report.rejected.length + report.unverifiable.length + report.distrusted.length;
    if (report.rejected.length > 0) console.error(`${report.rejected.length} row(s) do not check under the secret that signed them: workers refuse them. See SECURITY.md.`);
    if (report.unverifiable.length > 0) {
      console.error(`${report.unverifiable.length} row(s) are signed by a secret the CLI was not given (or unsigned): give it that secret in previousSecrets and run this again.`);
    }
    if (report.distrusted.length > 0) {
      console.error(`${report.distrusted.length} row(s) were signed by a distrusted secret and left as they are: check each with the vendor (show KEY), then resolve or release it.`);
    }
    if (report.changedMeanwhile > 0) console.error(`${report.changedMeanwhile} row(s) changed while this ran: run it again.`);
    return left > 0 ? EXIT.conflict : EXIT.ok;
  }
  throw new CliError(`keys needs status or re-sign, got ${JSON.stringify(subcommand)}. See --help.`, EXIT.usage);
}

async function* oneBatch<T>(rows: T[]): AsyncGenerator<T[]> {
  yield rows;
}

function keyRequest(values: Flags): KeyRequest {
  return {
    activityType: values.activity,
    namespace: values.namespace,
    scope: values.scope,
    workflowId: values.workflow,
    runId: values.run,
    activityId: values['activity-id'],
    args: values.args,
    customKey: values['custom-key'],
  };
}

function storeRoles(values: Flags): StoreRoles {
  return { worker: values['worker-role'], operator: values['operator-role'] };
}

function listFilter(values: Flags): ListFilter {
  const state = values.state;
  if (state !== undefined && !(CLAIM_STATES as readonly string[]).includes(state)) {
    throw new CliError(`--state ${JSON.stringify(state)} is not one of ${CLAIM_STATES.join(', ')}.`, EXIT.usage);
  }
  return {
    state: state as ListFilter['state'],
    workflowId: values.workflow,
    activityType: values.activity,
    olderThanMs: parseDuration('--older-than', values['older-than']),
    limit: parseLimit(values.limit),
  };
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
        version: { type: 'boolean' },
        state: { type: 'string' },
        workflow: { type: 'string' },
        activity: { type: 'string' },
        'older-than': { type: 'string' },
        limit: { type: 'string' },
        result: { type: 'string' },
        'result-file': { type: 'string' },
        force: { type: 'boolean' },
        'no-signal': { type: 'boolean' },
        plaintext: { type: 'boolean' },
        'workflow-id': { type: 'string' },
        'dry-run': { type: 'boolean' },
        'ledger-older-than': { type: 'string' },
        // Renamed to --force; kept only to say so.
        'allow-short': { type: 'boolean' },
        'vendor-key-window': { type: 'string' },
        key: { type: 'string' },
        reason: { type: 'string' },
        'worker-config': { type: 'string' },
        'worker-role': { type: 'string' },
        'operator-role': { type: 'string' },
        distrust: { type: 'string', multiple: true },
        'statement-timeout': { type: 'string' },
        namespace: { type: 'string' },
        scope: { type: 'string' },
        run: { type: 'string' },
        'activity-id': { type: 'string' },
        args: { type: 'string' },
        'custom-key': { type: 'string' },
      },
    });
  } catch (error) {
    throw new CliError(`${errorMessage(error)}. See --help.`, EXIT.usage);
  }
}

function requireKey(command: string, key: string | undefined): string {
  if (!key) throw new CliError(`${command} needs a KEY (a claim's key, as in a refusal's details or \`list\`).`, EXIT.usage);
  return key;
}

function parseLimit(text: string | undefined): number {
  if (text === undefined) return 50;
  const limit = Number(text);
  if (!Number.isSafeInteger(limit) || limit <= 0) {
    throw new CliError(`--limit ${JSON.stringify(text)} is not a positive integer up to ${Number.MAX_SAFE_INTEGER}.`, EXIT.usage);
  }
  return limit;
}

export { failureOf } from './failures.js';

/**
 * A key with no claim left may still have a story: released or pruned by an operator. Printed on stderr
 * before the not-found exit, so the 3 a.m. question "why did this call run again?" has its answer.
 */
async function absentWithTrail(operations: ClaimOperations, error: unknown): Promise<never> {
  if (!(error instanceof ClaimNotFoundError)) throw error;
  const trail = await operations.operatorActions(error.key);
  if (trail.length === 0) throw error;
  console.error(`No claim for key ${error.key}; the operator trail has ${trail.length} entr${trail.length === 1 ? 'y' : 'ies'} for it:`);
  for (const action of trail) {
    const parts = [action.at.toISOString(), action.action, `by ${action.databaseUser}`, action.forced ? '(--force)' : '', action.reason ? `reason: ${action.reason}` : ''];
    console.error(`  ${terminalText(parts.filter(Boolean).join(' '))}`);
  }
  throw new CliError(`No claim for key ${error.key}.`, EXIT.notFound);
}
