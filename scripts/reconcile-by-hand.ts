/**
 * Asks the vendor about one refused call by hand, with the very `reconcile` the
 * workers run: it reads the claim, takes the `reconcile` of its activity type
 * from the settings the example worker registers (`exampleActivitySettings`),
 * asks, and prints the answer. It changes nothing: a person then runs
 * `temporal-idempotency resolve` or `release` as the answer says. Copy it and
 * import your own worker's settings.
 *
 *   DATABASE_URL=… VENDOR_URL=… npx tsx scripts/reconcile-by-hand.ts <key>
 *
 * Optional IDEMPOTENCY_SCHEMA. Prints `{ key, activity_type, state, answer }` as
 * JSON on stdout and the next step on stderr. Exit 0 with an answer (whatever
 * it is), 1 when the reconcile threw, 2 bad usage, 3 no such key, 4 nothing to
 * ask (the claim is completed, or its type has no reconcile).
 */
import pg from 'pg';
import type { Info } from '@temporalio/activity';
import { defaultPayloadConverter } from '@temporalio/common';
import { ClaimNotFoundError, ClaimOperations, keyToUuid } from '../src/index.js';
import type { Reconciler, Reconciliation } from '../src/index.js';
import { exampleActivitySettings } from '../activities/index.js';

const [key] = process.argv.slice(2);
const vendorUrl = process.env['VENDOR_URL'];
if (!key || !vendorUrl || !(process.env['DATABASE_URL'] || process.env['PGHOST'])) {
  console.error('Usage: DATABASE_URL=… VENDOR_URL=… npx tsx scripts/reconcile-by-hand.ts <key>');
  process.exit(2);
}

// The settings the workers register: the same reconcile, asked the same question.
const settings: Record<string, { reconcile?: Reconciler<never> } | undefined> = exampleActivitySettings({ vendorUrl });

const pool = new pg.Pool({ connectionString: process.env['DATABASE_URL'], connectionTimeoutMillis: 5_000 });
try {
  process.exitCode = await reconcileByHand(key);
} finally {
  await pool.end();
}

async function reconcileByHand(claimKey: string): Promise<number> {
  const operations = new ClaimOperations(pool, { schema: process.env['IDEMPOTENCY_SCHEMA'] });
  const claim = await operations.show(claimKey).catch((error: unknown) => {
    if (error instanceof ClaimNotFoundError) return undefined;
    throw error;
  });
  if (!claim) {
    console.error(`No claim ${claimKey}.`);
    return 3;
  }
  if (claim.state === 'completed') {
    console.error(`Claim ${claimKey} is completed: its outcome is on record, there is nothing to ask.`);
    return 4;
  }
  const reconcile = settings[claim.activityType]?.reconcile as Reconciler | undefined;
  if (!reconcile) {
    console.error(`Activity type ${claim.activityType} has no reconcile in the worker's settings: check the vendor by hand.`);
    return 4;
  }
  if (claim.ownerAlive) {
    console.error(`Warning: the owner's lease is live (${claim.claimedBy}): it may still be calling, and the answer may change.`);
  }
  const args = await recordedArguments(operations, claimKey);
  // No activity runs here, so there is no activity Info: the claim's own facts stand in for its fields.
  // The example's reconcile reads only the key; one that reads more of `info` must be given it.
  const info = {
    activityType: claim.activityType,
    activityId: claim.activityId,
    attempt: claim.attempt,
    namespace: claim.namespace,
    workflowNamespace: claim.namespace,
    workflowExecution: { workflowId: claim.workflowId ?? '', runId: claim.runId ?? '' },
  } as unknown as Info;
  let answer: Reconciliation;
  try {
    answer = await reconcile({ key: claimKey, keyUuid: keyToUuid(claimKey), args, claim, info, signal: AbortSignal.timeout(30_000) });
  } catch (error) {
    console.error(`The reconcile threw, so nobody can tell: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
  console.log(JSON.stringify({ key: claimKey, activity_type: claim.activityType, state: claim.state, answer }));
  console.error(
    answer.outcome === 'happened'
      ? `It happened: record its result with \`temporal-idempotency resolve ${claimKey} --result-file -\` (the answer's result on stdin).`
      : answer.outcome === 'not-happened'
        ? `It did not happen: \`temporal-idempotency release ${claimKey}\` lets the next attempt run it, with the same key.`
        : `Nobody can tell (${answer.reason ?? 'no reason given'}): check the vendor by hand before resolve or release.`,
  );
  return 0;
}

/**
 * The semantic arguments the call was made with (after `keyArgs`), as the workers recorded them: the
 * canonical text, encoded like a result. The example's workers use no codec; with yours, decode with
 * your workers' converter and codecs here. What cannot be read is left out, and the reconcile gets none.
 */
async function recordedArguments(operations: ClaimOperations, claimKey: string): Promise<readonly unknown[]> {
  const recorded = await operations.recordedArguments(claimKey);
  if (!recorded) return [];
  try {
    const text = defaultPayloadConverter.fromPayload(recorded);
    const args: unknown = typeof text === 'string' ? JSON.parse(text) : text;
    return Array.isArray(args) ? args : [];
  } catch (error) {
    console.error(
      `Warning: the recorded arguments cannot be read here (${error instanceof Error ? error.name : typeof error}; a codec?): ` +
        'the reconcile is asked without them.',
    );
    return [];
  }
}
