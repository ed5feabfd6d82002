/**
 * The reconcile sub-protocol: an attempt that took an orphaned claim over asks the vendor what became
 * of the orphan's call, and records, runs or refuses by the answer. The claim names the call it asks
 * about (its note, signed with the row), so an attempt that finds it after this one died asking asks
 * about the same call, and counts the rounds cut short by attempts' own time.
 */
import { keyToUuid } from '../key/index.js';
import type { Claim, OutcomeNote, ReconcileOutcome } from '../store/index.js';
import { cancellationError } from './attempt.js';
import type { Attempt, Step } from './attempt.js';
import { ledgerCallOf } from './call-identity.js';
import { CallSettlement } from './call-settlement.js';
import { askVendor } from './reconciliation.js';
import type { ReconcileAnswer, Reconciler } from './reconciliation.js';
import { reconcileUnfinished } from './refusals.js';
import type { ResultCodec } from './result-codec.js';

/**
 * How many attempts may ask the vendor about one orphan when each runs out of its own time first: the
 * vendor may be slow for a moment; after these, nobody can tell and the refusal stands.
 */
const RECONCILE_ROUNDS = 3;
/** How often an attempt heartbeats while asking the vendor; the SDK throttles it further to the heartbeat timeout. */
const RECONCILE_HEARTBEAT_EVERY_MS = 1_000;

/** Asks the vendor about the orphaned call, under the taken-over claim, and acts on the answer. */
export async function reconciled(attempt: Attempt, reconcile: Reconciler, orphan: Claim, unfinished: number, taken: Claim): Promise<Step> {
const { context, deps, settings, trace } = attempt;
  const settlement = new CallSettlement(context, deps, settings, taken);
  deps.leases.hold(taken, () => settlement.lost());
  let answer: ReconcileAnswer;
  // Less time left in this attempt than reconcileTimeoutMs: running out of it is the attempt's limit, not
  // the vendor's answer, so the next attempt asks again (a few times: RECONCILE_ROUNDS).
  let cutByAttempt = false;
  try {
    const call = { key: orphan.key, keyUuid: keyToUuid(orphan.key), args: attempt.args, claim: orphan, info: context.info };
    const { reconcileTimeoutMs } = deps.options;
    const attemptLeftMs = attempt.deadline - Date.now();
    cutByAttempt = attemptLeftMs < reconcileTimeoutMs;
    const timeoutMs = Math.max(1, Math.min(reconcileTimeoutMs, attemptLeftMs));
    // Heartbeating while the vendor is asked, as while waiting for an owner: with a heartbeat timeout under
    // reconcileTimeoutMs, Temporal would time every asking attempt out, and the next would ask again for ever.
    const details: unknown = context.info.heartbeatDetails;
    context.heartbeat(details);
    const heartbeats = setInterval(() => context.heartbeat(details), RECONCILE_HEARTBEAT_EVERY_MS);
    try {
      answer = await askVendor(reconcile, call, timeoutMs, context.cancellationSignal);
    } finally {
      clearInterval(heartbeats);
    }
  } finally {
    deps.leases.drop(taken.token);
  }
  deps.metrics.reconciled(context.metricMeter, answer.outcome);
  trace.decided(`reconciled:${answer.outcome}`);
  await recordReconciliation(attempt, taken, answer.outcome);
  const orphanedBy = `the call of attempt ${orphan.attempt} on worker ${orphan.claimedBy} at ${orphan.claimedAt.toISOString()}`;
  switch (answer.outcome) {
    case 'happened':
      context.log.info(`Idempotency: the vendor says ${orphanedBy} happened; recorded its result, not calling again`, {
        idempotencyKey: orphan.key,
      });
      await settlement.succeeded(answer.result);
      return { kind: 'answer', value: answer.result };
    case 'not-happened':
      context.log.warn(`Idempotency: the vendor says ${orphanedBy} did not happen; calling it now, with the same key`, {
        idempotencyKey: orphan.key,
      });
      return { kind: 'run', claim: taken };
    case 'unknown':
      if (answer.timedOut && cutByAttempt && unfinished + 1 < RECONCILE_ROUNDS && !context.cancellationSignal.aborted) {
        // The vendor was only slow for this attempt's time: the outcome stays unknown, and the next attempt asks again.
        context.log.warn('Idempotency: this attempt ran out of time while asking the vendor; the next attempt asks again', {
          idempotencyKey: orphan.key,
        });
        throw await settlement.interrupted(
          orphan,
          { summary: `${answer.summary}, the end of attempt ${taken.attempt}'s time, about ${orphanedBy}`, detail: answer.summary },
          unfinished + 1,
          reconcileUnfinished(orphan, taken, answer.summary),
        );
      }
      if (context.cancellationSignal.aborted) {
        // Cut short by the attempt's own cancellation (a deploy's shutdown, a timeout), not by the vendor: the
        // outcome stays unknown, and the next attempt asks again instead of a person being paged.
        context.log.warn('Idempotency: cancelled while asking the vendor; the next attempt asks again', { idempotencyKey: orphan.key });
        throw await settlement.interrupted(
          orphan,
          { summary: `cancelled while asking the vendor about ${orphanedBy}`, detail: answer.detail ?? answer.summary },
          unfinished,
          cancellationError(context),
        );
      }
      if (settings.vendorDedup) {
        context.log.warn('Idempotency: reconcile could not tell; re-running with the same key, which the vendor dedups on', {
          idempotencyKey: orphan.key,
        });
        return { kind: 'run', claim: taken };
      }
      throw await settlement.refuse({ summary: `${answer.summary} about ${orphanedBy}`, detail: answer.detail ?? answer.summary }, orphan);
  }
}

/** Best effort, like every ledger entry about something that did not go out. */
async function recordReconciliation({ context, deps }: Attempt, taken: Claim, answer: ReconcileOutcome): Promise<void> {
  const ledger = deps.options.auditLedger;
  if (!ledger?.recordReconciliation) return;
  await ledger
    .recordReconciliation(ledgerCallOf(context.info, taken.key, taken.claimedBy), answer)
    .catch((error: unknown) => context.log.error('Idempotency: could not append the reconciliation to the ledger', { error }));
}

/**
 * The call a question to the vendor is about, and how many questions about it earlier attempts had cut
 * short by their own time: the orphan itself, or, when the orphan is the claim of an attempt that died
 * asking, the call that attempt named in its note (its detail, through the codec, signed with the row).
 */
export async function askingAbout(codec: ResultCodec, orphan: Claim): Promise<{ call: Claim; unfinished: number; note: OutcomeNote }> {
  type Noted = { readonly origin?: unknown; readonly unfinishedReconciles?: unknown } | null;
  let noted: Noted = null;
  try {
    noted = orphan.outcomeDetail ? ((await codec.decode(orphan.outcomeDetail)) as Noted) : null;
  } catch {
    // A note this worker cannot read: the orphan speaks for itself, and no round is counted.
  }
  const rounds = noted?.unfinishedReconciles;
  const unfinished = typeof rounds === 'number' && Number.isInteger(rounds) && rounds > 0 ? rounds : 0;
  const call = callFrom(noted?.origin, orphan) ?? orphan;
  const summary = `asking the vendor about the call of attempt ${call.attempt} on worker ${call.claimedBy} at ${call.claimedAt.toISOString()}`;
  const origin: CallOrigin = {
    token: call.token,
    attempt: call.attempt,
    claimedBy: call.claimedBy,
    claimedAt: call.claimedAt.toISOString(),
    leaseExpiresAt: call.leaseExpiresAt?.toISOString() ?? null,
    deadlineAt: call.deadlineAt?.toISOString() ?? null,
    workflowId: call.workflowId,
    runId: call.runId,
    activityId: call.activityId,
    outcomeNote: call.outcomeNote,
  };
  const detail = await codec.encode({ note: summary, origin, unfinishedReconciles: unfinished }).catch(() => null);
  return { call, unfinished, note: { summary, detail } };
}

/** What a claim taken over to ask the vendor keeps of the call it asks about (see `askingAbout`). */
interface CallOrigin {
  readonly token: string;
  readonly attempt: number;
  readonly claimedBy: string;
  readonly claimedAt: string;
  readonly leaseExpiresAt: string | null;
  readonly deadlineAt: string | null;
  readonly workflowId: string | null;
  readonly runId: string | null;
  readonly activityId: string;
  readonly outcomeNote: string | null;
}

/** The call a dead asker named, over the claim it left; undefined when `origin` is not one. */
function callFrom(origin: unknown, orphan: Claim): Claim | undefined {
  const o = origin as Partial<CallOrigin> | null | undefined;
  if (typeof o !== 'object' || o === null || typeof o.token !== 'string' || typeof o.attempt !== 'number') return undefined;
  if (typeof o.claimedBy !== 'string' || typeof o.claimedAt !== 'string' || typeof o.activityId !== 'string') return undefined;
  const date = (text: string | null | undefined) => (typeof text === 'string' ? new Date(text) : null);
  return {
    ...orphan,
    token: o.token,
    attempt: o.attempt,
    claimedBy: o.claimedBy,
    claimedAt: new Date(o.claimedAt),
    leaseExpiresAt: date(o.leaseExpiresAt),
    deadlineAt: date(o.deadlineAt),
    workflowId: o.workflowId ?? null,
    runId: o.runId ?? null,
    activityId: o.activityId,
    outcomeNote: o.outcomeNote ?? null,
  };
}
