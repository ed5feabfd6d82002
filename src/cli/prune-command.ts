/**
 * `prune`: deletes completed claims nobody can still need, and with
 * --ledger-older-than the ledger's old calls. Temporal is asked for each
 * namespace's retention (the default horizon, and the floor of a given one)
 * and whether the workflows of the claims past the horizon still run or closed
 * within it; their claims stay. Prints what goes before it goes.
 */
import type { ClaimOperations, PruneScope, WorkflowRef } from '../store/index.js';
import { parseDuration } from './duration.js';
import { EXIT } from './errors.js';
import { printRecord, pruneRecord } from './output.js';
import type { PrunePlan } from './output.js';
import { choosePruneHorizon, checkRequest } from './prune-horizon.js';
import type { HorizonRequest, RetentionReading } from './prune-horizon.js';
import { connectForRetention } from './temporal-retention.js';
import type { TemporalRetention } from './temporal-retention.js';
import { errorMessage } from '../error-text.js';

/** Workflows asked about at once: enough to be quick, few enough not to flood a shared frontend. */
const CHECK_CONCURRENCY = 8;

export interface PruneFlags {
  readonly 'older-than'?: string | undefined;
  readonly 'ledger-older-than'?: string | undefined;
  readonly 'vendor-key-window'?: string | undefined;
  readonly force?: boolean | undefined;
  readonly 'dry-run'?: boolean | undefined;
  readonly reason?: string | undefined;
}

export async function prune(operations: ClaimOperations, flags: PruneFlags, json: boolean): Promise<number> {
  const request: HorizonRequest = {
    olderThanMs: parseDuration('--older-than', flags['older-than']),
    vendorKeyWindowMs: parseDuration('--vendor-key-window', flags['vendor-key-window']),
    ledgerOlderThanMs: parseDuration('--ledger-older-than', flags['ledger-older-than']),
    force: flags.force ?? false,
  };
  checkRequest(request);
  // The database first: a schema that cannot be used fails before Temporal is dialled.
  const namespaces = await operations.completedClaimNamespaces();
  const connected = await connectForRetention();
  const temporal = connected instanceof Error ? undefined : connected;
  try {
    const retention: RetentionReading = temporal ? await readRetention(namespaces, temporal) : { unavailable: errorMessage(connected) };
    const horizon = choosePruneHorizon(request, retention);
    const asOf = await operations.databaseNow();
    const unavailable = 'unavailable' in retention ? retention.unavailable : undefined;
    // Asked about the workflows whenever it is connected, even when one namespace's retention could not be
    // read: a workflow it cannot answer for keeps its claims, and the others are still checked.
    const asked = temporal;
    if (unavailable !== undefined) {
      console.error(
        asked
          ? `Temporal could not tell every namespace's retention (${unavailable}): the horizon was not checked ` +
              `against it. Claims of workflows that still run, or that Temporal cannot answer for, stay.`
          : `Temporal cannot be asked (${unavailable}): the horizon was not checked against the namespace's ` +
              `retention, nor whether the workflows of these claims still run. Claims without an outcome stay regardless.`,
      );
    }
    const kept = asked ? await workflowsStillNeeding(operations, asked, horizon.ms, asOf) : { workflows: [], claims: 0 };
    const scope: PruneScope = { asOf, keepWorkflows: kept.workflows };
    const plan: PrunePlan = {
      summary: await operations.pruneSummary(horizon.ms, scope),
      horizonMs: horizon.ms,
      horizonFrom: horizon.from,
      namespaceRetention: 'byNamespace' in retention ? retention.byNamespace : null,
      vendorKeyWindowMs: request.vendorKeyWindowMs ?? null,
      temporal: asked ? `asked at ${asked.description}` : `not asked: ${unavailable}`,
      keptForWorkflows: kept.claims,
      ledgerHorizonMs: request.ledgerOlderThanMs ?? null,
    };
    const ledgerCount = request.ledgerOlderThanMs === undefined ? null : await operations.pruneLedger(request.ledgerOlderThanMs, { dryRun: true });
    if (flags['dry-run']) {
      printRecord(pruneRecord(plan, { dryRun: true, pruned: plan.summary.count, ledgerPruned: ledgerCount }, json), json);
      return EXIT.ok;
    }
    // A person sees what goes before it goes; a script gets one record, the same fields as a dry run's.
    if (!json) printRecord(pruneRecord(plan, { dryRun: false, ledgerPruned: ledgerCount }, false), false);
    const pruned = await operations.prune(horizon.ms, { ...scope, reason: flags.reason, forced: flags.force ?? false });
    const ledgerPruned =
      request.ledgerOlderThanMs === undefined ? null : await operations.pruneLedger(request.ledgerOlderThanMs, { reason: flags.reason });
    if (json) printRecord(pruneRecord(plan, { dryRun: false, pruned, ledgerPruned }, true), true);
    else printRecord(ledgerPruned === null ? { pruned } : { pruned, ledger_pruned: ledgerPruned }, false);
    return EXIT.ok;
  } finally {
    await temporal?.close();
  }
}

/** The retention of every namespace completed claims were made in (the profile's, if none yet). */
async function readRetention(recorded: readonly string[], temporal: TemporalRetention): Promise<RetentionReading> {
  const namespaces = recorded.length > 0 ? recorded : [temporal.defaultNamespace];
  const byNamespace = new Map<string, number>();
  try {
    for (const namespace of namespaces) byNamespace.set(namespace, await temporal.retentionOf(namespace));
  } catch (error) {
    return { unavailable: errorMessage(error) };
  }
  return { byNamespace };
}

interface KeptWorkflows {
  readonly workflows: WorkflowRef[];
  /** Claims past the horizon that stay for them. */
  readonly claims: number;
}

/**
 * The workflows, among those with claims past the horizon, that may still call again: running, or
 * closed after the cutoff. One Temporal cannot answer for is kept too, and named on stderr.
 */
async function workflowsStillNeeding(operations: ClaimOperations, temporal: TemporalRetention, horizonMs: number, asOf: Date): Promise<KeptWorkflows> {
  const cutoff = new Date(asOf.getTime() - horizonMs);
  const workflows: WorkflowRef[] = [];
  let claims = 0;
  const unchecked: string[] = [];
  for await (const page of operations.pruneCandidateWorkflows(horizonMs, { asOf })) {
    for (let i = 0; i < page.length; i += CHECK_CONCURRENCY) {
      const batch = page.slice(i, i + CHECK_CONCURRENCY);
      const checks = await Promise.all(batch.map((workflow) => temporal.checkWorkflow(workflow, cutoff)));
      batch.forEach((workflow, j) => {
        const check = checks[j]!;
        if ('needed' in check && !check.needed) return;
        if ('unchecked' in check) unchecked.push(`${workflow.namespace}/${workflow.workflowId}: ${check.unchecked}`);
        workflows.push({ namespace: workflow.namespace, workflowId: workflow.workflowId });
        claims += workflow.claims;
      });
    }
  }
  if (unchecked.length > 0) {
    console.error(
      `Temporal could not say whether ${unchecked.length} workflow(s) still run, so their claims stay: ` +
        `${unchecked.slice(0, 3).join('; ')}${unchecked.length > 3 ? '; …' : ''}`,
    );
  }
  return { workflows, claims };
}
