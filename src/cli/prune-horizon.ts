/**
 * How far back `prune` may delete completed claims. A completed claim is what
 * makes a retry, a reset or a replayed signal answer from the record instead of
 * calling again, so the horizon must outlast the namespace's retention (while
 * Temporal keeps a closed workflow's history it can be reset, and with
 * `workflow` scope the reset finds the record only if it is still here) and the
 * vendor's key window. Given a horizon, check it; given none, take the longer
 * of the two, read from Temporal, never guessed.
 */
import { CliError, EXIT } from './errors.js';
import { durationText } from './duration.js';

/** Shorter horizons need --force: a typo here deletes the records that stop a repeat. */
export const MIN_PRUNE_HORIZON_MS = 3_600_000;
/** `prune_ledger` keeps every call at least this long, whoever asks (migration 9). */
export const MIN_LEDGER_HORIZON_MS = 86_400_000;

export interface HorizonRequest {
  /** --older-than, when given. */
  readonly olderThanMs?: number | undefined;
  /** --vendor-key-window: no claim younger than it is pruned, --force or not. */
  readonly vendorKeyWindowMs?: number | undefined;
  /** --ledger-older-than, when given. */
  readonly ledgerOlderThanMs?: number | undefined;
  readonly force: boolean;
}

/** Each namespace's workflow execution retention (ms), or why Temporal could not say. */
export type RetentionReading = { readonly byNamespace: ReadonlyMap<string, number> } | { readonly unavailable: string };

export interface PruneHorizon {
  readonly ms: number;
  /** Where it came from, for the output: `--older-than`, `namespace retention (ns)`, `--vendor-key-window`. */
  readonly from: string;
}

/** The checks that need no Temporal: made before connecting, so a typo costs nothing. */
export function checkRequest(request: HorizonRequest): void {
  const { olderThanMs, vendorKeyWindowMs, ledgerOlderThanMs } = request;
  if (olderThanMs !== undefined && olderThanMs < MIN_PRUNE_HORIZON_MS && !request.force) {
    throw new CliError(
      `--older-than ${durationText(olderThanMs)} is under an hour: completed claims that recent are what stops a retry or a ` +
        `reset from calling again. Keep them longer than the namespace's retention and the vendor's key window; add ` +
        `--force only if you mean it. Nothing was deleted.`,
      EXIT.usage,
    );
  }
  if (olderThanMs !== undefined && vendorKeyWindowMs !== undefined && olderThanMs < vendorKeyWindowMs) {
    throw new CliError(
      `--older-than ${durationText(olderThanMs)} is shorter than --vendor-key-window ${durationText(vendorKeyWindowMs)}: ` +
        `a claim is kept at least as long as the vendor keeps its idempotency key, --force or not. Use --older-than ` +
        `${durationText(vendorKeyWindowMs)} or more. Nothing was deleted.`,
      EXIT.usage,
    );
  }
  if (ledgerOlderThanMs !== undefined && ledgerOlderThanMs < MIN_LEDGER_HORIZON_MS) {
    throw new CliError(
      `--ledger-older-than ${durationText(ledgerOlderThanMs)} is under a day: the ledger keeps every call that went out ` +
        `for at least a day, whoever asks. Nothing was deleted.`,
      EXIT.usage,
    );
  }
}

/** The horizon to prune claims at, or a usage error that says why not and what to give instead. */
export function choosePruneHorizon(request: HorizonRequest, retention: RetentionReading): PruneHorizon {
  checkRequest(request);
  const { olderThanMs, vendorKeyWindowMs } = request;
  if ('unavailable' in retention) {
    if (olderThanMs !== undefined) return { ms: olderThanMs, from: '--older-than' };
    throw new CliError(
      `Temporal cannot be asked (${retention.unavailable}), so prune cannot read how long the namespace keeps ` +
        `workflow histories, and will not guess. Give the horizon with --older-than, at least the namespace's ` +
        `retention (\`temporal operator namespace describe <namespace>\` shows it). Nothing was deleted.`,
      EXIT.usage,
    );
  }
  const longest = longestRetention(retention.byNamespace);
  if (olderThanMs !== undefined) {
    if (longest && olderThanMs < longest.ms && !request.force) {
      const keep = durationText(longest.ms);
      throw new CliError(
        `--older-than ${durationText(olderThanMs)} is shorter than the retention of namespace ${longest.namespace} (${keep}): ` +
          `Temporal keeps a closed workflow's history, and lets it be reset, for ${keep}, and with workflow scope (the ` +
          `default) a reset answers from these records only while they are here; pruned sooner, a reset calls the vendor ` +
          `again. Use --older-than ${keep} or more (or leave it out), or add --force if you accept that. Nothing was deleted.`,
        EXIT.usage,
      );
    }
    return { ms: olderThanMs, from: '--older-than' };
  }
  const candidates: PruneHorizon[] = [{ ms: MIN_PRUNE_HORIZON_MS, from: 'the one-hour minimum' }];
  if (longest) candidates.push({ ms: longest.ms, from: `namespace retention (${longest.namespace})` });
  if (vendorKeyWindowMs !== undefined) candidates.push({ ms: vendorKeyWindowMs, from: '--vendor-key-window' });
  return candidates.reduce((best, next) => (next.ms > best.ms ? next : best));
}

function longestRetention(byNamespace: ReadonlyMap<string, number>): { namespace: string; ms: number } | undefined {
  let longest: { namespace: string; ms: number } | undefined;
  for (const [namespace, ms] of byNamespace) if (!longest || ms > longest.ms) longest = { namespace, ms };
  return longest;
}
