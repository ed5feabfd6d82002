/**
 * How a call that ran under a claim is settled: its result recorded, its claim
 * released when nothing happened, or kept as `unknown` when something may have.
 * Every write is guarded by the claim's token, so a claim that changed hands
 * while the call ran (an operator's `--force`, a takeover) is never overwritten.
 */
import type { Context } from '@temporalio/activity';
import { CompleteAsyncError } from '@temporalio/common';
import type { Payload } from '@temporalio/common';
import type { Claim, ClaimStore, HeldClaim, OutcomeNote } from '../store/index.js';
import { retryFor } from '../bounded-retry.js';
import { keyToUuid } from '../key/index.js';
import { errorClass, errorMessage, errorSummary, errorText } from '../error-text.js';
import type { InterceptorDependencies } from './dependencies.js';
import { classifyOutcome } from './outcome-classification.js';
import type { OutcomeVerdict } from './outcome-classification.js';
import type { ResolvedActivitySettings } from './options.js';
import { orphanedClaim } from './refusals.js';
import { tellWaitersOfOutcome, tellerOf } from './waiter-signals.js';

/**
 * How long a settling write goes on in the background once the attempt gave up waiting for it: a
 * failover or restart outlasting `recordRetryMs` should still end in a record, and in told waiters.
 */
const SETTLEMENT_FOLLOW_UP_MS = 10 * 60_000;

export class CallSettlement {
  private readonly verdicts = new WeakMap<object, OutcomeVerdict>();
  private lostReported = false;
  /** Set once this attempt writes its outcome: from then on a row no longer `claimed` is its own doing. */
  private settling = false;

  constructor(
    private readonly context: Context,
    private readonly deps: InterceptorDependencies,
    private readonly settings: ResolvedActivitySettings,
    /** The claim this attempt holds: every row of it (its key and aliases) settles together. */
    private readonly claim: Claim & HeldClaim,
  ) {}

  /** One verdict per error, whoever asks first (the ledger asks before the claim is settled). */
  outcomeOf(error: unknown): OutcomeVerdict {
    const cached = typeof error === 'object' && error !== null ? this.verdicts.get(error) : undefined;
    if (cached) return cached;
    const signal = this.context.cancellationSignal;
    const verdict = classifyOutcome(error, {
      isAmbiguous: this.settings.isAmbiguous,
      cancelled: signal.aborted ? cancelReason(signal) : undefined,
      redirectedWrite: this.deps.redirects.writeOf(this.context, [this.claim.key, keyToUuid(this.claim.key)]),
    });
    if (typeof error === 'object' && error !== null) this.verdicts.set(error, verdict);
    return verdict;
  }

  /**
   * The call happened. Record it; if the store stays unreachable, still return the
   * result (the workflow must know) and leave the claim, so a replay refuses instead of repeating.
   */
  async succeeded(result: unknown): Promise<void> {
    this.settling = true;
    let payload: Payload;
    try {
      payload = await this.deps.codec.encode(result);
    } catch (error) {
      // Temporal could not carry this result either; say so now rather than after a retry.
      throw await this.keepUnknown(
        {
          summary: `the call succeeded but its result could not be encoded (${errorSummary(error)})`,
          detail: errorText(error),
        },
      );
    }
    // Workflows refused on this key meanwhile (this attempt's lease lapsed, or it ran past its deadline) are told.
    const recorded = await this.write('record the result', 'resolved', (store) => store.complete(this.claim, payload), (now) => now?.state === 'completed');
    if (recorded === false) this.warnClaimChanged('record its result');
  }

  /**
   * The activity threw. Returns the error to throw: the activity's own when nothing happened (the
   * claim is released and Temporal's retry policy decides), else a refusal, the claim kept `unknown`.
   * With `vendorDedup`, the activity's own error after the claim is kept: the retry takes the claim
   * over and calls again with the same key, which the vendor answers with its original response.
   */
  async failed(error: unknown): Promise<unknown> {
    this.settling = true;
    if (error instanceof CompleteAsyncError) {
      // The outcome goes to Temporal through the client, never here: later attempts must refuse at once.
      const note = 'the activity completes asynchronously; its outcome went to Temporal, not to this store';
      return this.keepUnknown({ summary: note, detail: note }, error);
    }
    const verdict = this.outcomeOf(error);
    // With vendorDedup or reconcile, the next attempt can do better than a refusal: Temporal retries it.
    const retryable = this.settings.vendorDedup || this.settings.reconcile !== undefined;
    if (verdict.ambiguous) return this.keepUnknown(verdict, retryable ? error : undefined);
    await this.release();
    return error;
  }

  /** The outcome stays unknown (a reconciler could not tell): keep the claim so, and return the refusal. */
  async refuse(why: { summary: string; detail: string }, about?: Claim): Promise<unknown> {
    this.settling = true;
    if (!about) return this.keepUnknown(why);
    // The claim goes back to naming the call it is about (this attempt asked, it did not call), and the refusal names it too.
    await this.handBack(about, why, 0);
    await this.noteWaiter();
    const shownDetail = this.deps.options.payloadCodecs.length > 0 ? null : why.detail;
    return orphanedClaim({ ...about, state: 'unknown', outcomeNote: why.summary }, this.claim, shownDetail);
  }

  /**
   * The attempt's question to the vendor about `orphan` was cut short (cancelled, or out of time): it
   * called nothing, so the claim goes back to naming the orphan's call, its outcome unknown, with
   * `rounds` such questions cut short so far. Returns `error`, to rethrow (Temporal retries).
   */
  async interrupted(orphan: Claim, why: { summary: string; detail: string }, rounds: number, error: unknown): Promise<unknown> {
    this.settling = true;
    await this.handBack(orphan, why, rounds);
    return error;
  }

  /** Gives the claim back to `orphan`'s identity, unknown with `why` (and `rounds` questions cut short, for the next asker). */
  private async handBack(orphan: Claim, why: { summary: string; detail: string }, rounds: number): Promise<void> {
    const { store } = this.deps.options;
    const note: OutcomeNote = { summary: why.summary, detail: await this.deps.codec.encode({ note: why.detail, unfinishedReconciles: rounds }).catch(() => null) };
    const handedBack = await retryFor(this.deps.options.recordRetryMs, () => store.handBack(this.claim, orphan, note)).catch(
      (storeError: unknown) => void this.warnClaimKept('give the claim back', storeError),
    );
    if (handedBack === false) this.warnClaimChanged('give it back');
  }

  /** Nothing was sent (the attempt was cancelled before the call): give the claim back. */
  async releaseUnsent(error: unknown): Promise<unknown> {
    this.settling = true;
    await this.release();
    return error;
  }

  /** Told by the lease keeper: the claim is no longer ours (released, resolved or taken over meanwhile). */
  lost(): void {
    // A renewal racing this attempt's own record finds the row completed: that is no loss.
    if (this.lostReported || this.settling) return;
    this.lostReported = true;
    this.context.log.error(
      'Idempotency: this attempt lost its claim while its call ran (an operator released or resolved it, or another ' +
        'attempt took it over); its outcome will not be recorded over theirs',
      { idempotencyKey: this.claim.key, attempt: this.claim.attempt },
    );
  }

  private async release(): Promise<void> {
    // A workflow refused meanwhile is told to call again: nothing happened, and the key is free.
    const released = await this.write('release the claim', 'released', (store) => store.release(this.claim), (now) => now === null);
    if (released === false) this.warnClaimChanged('release it');
  }

  /**
   * One settling write, retried for `recordRetryMs` while the attempt waits. True when it took effect
   * (and the workflows refused on the key meanwhile are told `outcome`); false when the claim was
   * someone else's by then; undefined when the store stayed unreachable: the claim is kept (later
   * attempts refuse, never repeat), and the write goes on in the background for a while, telling the
   * waiters once it takes effect. A try whose answer was lost may have taken effect, so a later try
   * that finds nothing to change reads the claim to tell "our own earlier try" from "someone else's".
   */
  private async write(
    what: string,
    outcome: 'resolved' | 'released',
    settle: (store: ClaimStore) => Promise<boolean>,
    tookEffect: (now: Claim | null) => boolean,
  ): Promise<boolean | undefined> {
    const once = async (budgetMs: number, inBackground: boolean): Promise<boolean> => {
      const { store } = this.deps.options;
      const keepAlive = { keepAlive: !inBackground };
      let tries = 0;
      const done = await retryFor(budgetMs, () => (tries++, settle(store)), keepAlive);
      // In the background, the attempt's own tries came first, and one may have taken effect unanswered.
      if (done || (tries < 2 && !inBackground) ) return done;
      const now = await retryFor(budgetMs, () => store.get(this.claim.key), keepAlive);
      return (now === null || now.token === this.claim.token) && tookEffect(now);
    };
    let done: boolean;
    try {
      done = await once(this.deps.options.recordRetryMs, false);
    } catch (storeError) {
      this.context.log.error(
        `Idempotency: could not ${what} in time; trying on in the background for ${SETTLEMENT_FOLLOW_UP_MS / 60_000} minutes. ` +
          'Until then the claim stays without an outcome and later attempts are refused',
        { idempotencyKey: this.claim.key, error: storeError },
      );
      this.followUp(what, outcome, () => once(SETTLEMENT_FOLLOW_UP_MS, true));
      return undefined;
    }
    if (done) await tellWaitersOfOutcome(tellerOf(this.context), this.deps.options.store, this.claim, outcome);
    return done;
  }

  /** The write, tried on after the attempt returned; never throws. */
  private followUp(what: string, outcome: 'resolved' | 'released', write: () => Promise<boolean>): void {
    void write().then(
      async (done) => {
        if (!done) return this.warnClaimChanged(what);
        this.context.log.info(`Idempotency: could ${what} after all, once the store was back`, { idempotencyKey: this.claim.key });
        await tellWaitersOfOutcome(tellerOf(this.context), this.deps.options.store, this.claim, outcome);
      },
      (storeError: unknown) =>
        this.context.log.error(`Idempotency: gave up trying to ${what}; the claim stays without an outcome`, {
          idempotencyKey: this.claim.key,
          error: errorMessage(storeError),
        }),
    );
  }

  /**
   * Keeps the claim as `unknown`. Returns `rethrow` when given (Temporal retries it), else the
   * refusal that every attempt, this one first, will get.
   */
  private async keepUnknown(why: { summary: string; detail: string }, rethrow?: unknown): Promise<unknown> {
    // The detail may carry user data (an error message with a URL and its api key): only through the codec.
    const note: OutcomeNote = { summary: why.summary, detail: await this.deps.codec.encode({ note: why.detail }).catch(() => null) };
    const marked = await retryFor(this.deps.options.recordRetryMs, () => this.deps.options.store.markUnknown(this.claim, note)).catch(
      (storeError: unknown) => void this.warnClaimKept('mark the outcome unknown', storeError),
    );
    if (marked === false) this.warnClaimChanged('mark its outcome unknown');
    if (rethrow !== undefined) return rethrow;
    await this.noteWaiter();
    const shownDetail = this.deps.options.payloadCodecs.length > 0 ? null : why.detail;
    return orphanedClaim({ ...this.claim, state: 'unknown', outcomeNote: why.summary }, this.claim, shownDetail);
  }

  /**
   * This attempt's workflow is refused next: on record as waiting, so `prune` keeps the key's record
   * until it has been told of a decision. Best effort: the refusal stands either way.
   */
  private async noteWaiter(): Promise<void> {
    const { key, namespace, workflowId, runId, activityType } = this.claim;
    if (workflowId === null) return;
    await this.deps.options.store
      .addWaiter({ key, namespace, workflowId, runId, activityType })
      .catch((error: unknown) =>
        this.context.log.error('Idempotency: could not note the refused workflow as waiting on the key', { idempotencyKey: key, error }),
      );
  }

  /** An operator resolved or released the claim (with --force) while the call ran: theirs stands. */
  private warnClaimChanged(what: string): void {
    this.context.log.warn(`Idempotency: the claim was changed by someone else while the call ran; did not ${what}`, {
      idempotencyKey: this.claim.key,
    });
  }

  private warnClaimKept(what: string, error: unknown): void {
    this.context.log.error(
      `Idempotency: could not ${what}; the claim stays without an outcome and later attempts will be refused`,
      { idempotencyKey: this.claim.key, error },
    );
  }
}

function cancelReason(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  if (reason === undefined) return 'no reason given';
  return errorMessage(reason) || errorClass(reason);
}
