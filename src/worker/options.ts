/**
 * Options of `idempotencyInterceptors()`, validated once when the worker is
 * configured so a mistake fails the worker's start, not a payment at 3 a.m.
 */
import type { Info } from '@temporalio/activity';
import type { Logger } from '@temporalio/common';
import type { PayloadCodec, PayloadConverter } from '@temporalio/common';
import { defaultPayloadConverter } from '@temporalio/common';
import { SCOPES, isScope } from '../key/index.js';
import type { Scope } from '../key/index.js';
import type { AuditLedger, ClaimStore } from '../store/index.js';
import { IdempotencyConfigError } from '../errors.js';
import { defaultWorkerIdentity } from './worker-identity.js';
import type { Reconciler } from './reconciliation.js';

/** An activity function, as the worker registers it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the parameters are the user's, whatever they are
export type AnyActivity = (...args: any[]) => unknown;

/**
 * Per-activity-type settings; every field is optional and falls back to the worker-wide one.
 * `Args` is the activity's parameter list, so `keyArgs` and `key` see its real types.
 */
export interface ActivityIdempotencyOptions<Args extends readonly unknown[] = readonly unknown[]> {
  /** Which executions share a key. Default: the worker's `scope`. */
  readonly scope?: Scope;
  /**
   * The part of the arguments that defines the action; drop timestamps and trace ids here.
   * Default: all arguments.
   */
  readonly keyArgs?: (args: Args) => unknown;
  /**
   * Your own key for the action, e.g. `` ({ args }) => `charge:${args[0].orderId}` ``. It replaces
   * the scope: the same string is one action wherever it is called from. The semantic arguments
   * are still fingerprinted, so a key reused for a different action is refused.
   */
  readonly key?: (call: { readonly args: Args; readonly info: Info }) => string;
  /**
   * Return true (anything truthy) for an error after which the call may or may not have happened.
   * It can only add ambiguity: to say "nothing was sent", throw `NotSentError` from the activity.
   */
  readonly isAmbiguous?: (error: unknown) => unknown;
  /**
   * The vendor dedups on the key the activity passes it (`idempotencyKey()`), so on an orphaned
   * claim the activity may run again with the same key: the vendor answers the repeat with its
   * original response. Only true when the activity really passes the key. Default false.
   */
  readonly vendorDedup?: boolean;
  /**
   * Asked before a claim without an outcome is refused (its worker died mid-call, or the outcome was
   * unknown): look the call up at the vendor by its key and answer `happened` (with the result to
   * record and return), `not-happened` (the activity runs, with the same key) or `unknown` (the
   * refusal stands). Runs under the taken-over claim, so two attempts never reconcile at once.
   */
  readonly reconcile?: Reconciler<Args>;
  /** Keep the arguments with the claim, for operators (`show`). Default: the worker's `recordArguments`. */
  readonly recordArguments?: boolean;
}

/**
 * `T`, but not a place TypeScript infers `T` from (the built-in `NoInfer` needs TypeScript 5.4):
 * the activities' type comes from the caller, or is the untyped default, never from the settings.
 */
export type Uninferred<T> = [T][T extends unknown ? 0 : never];

/**
 * Settings by activity type name: an object, or `false` for an activity that is not a write (a
 * read, a poll, a pure computation), which then runs unguarded on every attempt.
 */
export type ActivitySettings<Activities extends object> = {
  readonly [Name in keyof Activities]?: Activities[Name] extends AnyActivity
    ? ActivityIdempotencyOptions<Parameters<Activities[Name]>> | false
    : never;
};

/**
 * Options of `idempotencyInterceptors()` and `IdempotencyPlugin`. Pass the worker's activities'
 * type (`idempotencyInterceptors<typeof activities>({...})`) and each activity's `keyArgs` and
 * `key` see its real parameter types; without it they see `any[]`.
 */
export interface IdempotencyOptions<Activities extends object = Record<string, AnyActivity>> {
  readonly store: ClaimStore;
  /** Default scope for every activity type. Default `workflow`. */
  readonly scope?: Scope;
  /** Settings by activity type name; `false` leaves an activity unguarded. */
  readonly activities?: ActivitySettings<Uninferred<Activities>>;
  /**
   * Which activities are guarded: `all` (default) but those set to `false`, or only those `listed`
   * under `activities` (for a worker whose activities are mostly reads).
   */
  readonly guard?: 'all' | 'listed';
  /** The worker's payload converter, if it has a custom one; recorded results are encoded with it. */
  readonly payloadConverter?: PayloadConverter;
  /** The worker's payload codecs (e.g. encryption), applied to recorded results in the same order. */
  readonly payloadCodecs?: readonly PayloadCodec[];
  /** How this process is named in claims and refusals. Default `<hostname>/<pid>`. */
  readonly workerIdentity?: string;
  /** How long to keep retrying to record a result after the call succeeded. Default 30 s. */
  readonly recordRetryMs?: number;
  /**
   * How long a claim's owner counts as alive without renewing its lease. The owning process renews
   * every third of it; a dead owner is recognised this long after its last renewal. Default 30 s.
   */
  readonly leaseMs?: number;
  /** How long a later attempt waits for a still-running earlier one (also bounded by its own timeout). Default 60 s. */
  readonly maxWaitMs?: number;
  /** How long a `reconcile` may take before its answer counts as `unknown`. Default 30 s. */
  readonly reconcileTimeoutMs?: number;
  /**
   * Keep an append-only ledger of the calls that actually went out: `true` for the store's own
   * (`PostgresClaimStore` keeps it beside the claims), or an `AuditLedger`. Default off.
   */
  readonly audit?: boolean | AuditLedger;
  /**
   * Keep each call's semantic arguments with its claim (encoded like results, through the codecs),
   * so an operator checking the vendor sees what was sent. Without an encrypting codec they are
   * readable to whoever can read the claims table: turn it off for arguments that must not be
   * stored. Default true.
   */
  readonly recordArguments?: boolean;
}

export interface ResolvedActivitySettings {
  /** False for an activity that is not a write: it runs unguarded, unclaimed and unrecorded. */
  readonly guarded: boolean;
  readonly scope: Scope;
  readonly keyArgs: ((args: readonly unknown[]) => unknown) | undefined;
  readonly key: ((call: { readonly args: readonly unknown[]; readonly info: Info }) => string) | undefined;
  readonly isAmbiguous: ((error: unknown) => unknown) | undefined;
  readonly vendorDedup: boolean;
  readonly reconcile: Reconciler | undefined;
  readonly recordArguments: boolean;
}

export interface ResolvedOptions {
  readonly store: ClaimStore;
  readonly payloadConverter: PayloadConverter;
  readonly payloadCodecs: readonly PayloadCodec[];
  readonly workerIdentity: string;
  readonly recordRetryMs: number;
  readonly leaseMs: number;
  readonly maxWaitMs: number;
  readonly reconcileTimeoutMs: number;
  /** How often an attempt waiting for a live owner re-reads the claim. */
  readonly pollMs: number;
  readonly auditLedger: AuditLedger | undefined;
  /** The settings of an activity type; the first time a type without settings runs, warns of a near-miss name. */
  settingsFor(activityType: string, log: Logger): ResolvedActivitySettings;
  /** Runs `warn` the first time this worker meets `topic`, never again. */
  warnOnce(topic: string, warn: () => void): void;
  /** The activity types named under `activities`. */
  readonly configuredActivities: readonly string[];
}

/** Below this, a GC pause or a slow renewal would make a live owner look dead. */
const MIN_LEASE_MS = 1_000;

/** The methods of ClaimStore that are not optional; the type below fails to compile when one is left out. */
type RequiredStoreMethod = { [Name in keyof ClaimStore]-?: object extends Pick<ClaimStore, Name> ? never : Name }[keyof ClaimStore];
const REQUIRED_STORE_METHODS = [
  'keySalt',
  'begin',
  'renewLeases',
  'get',
  'complete',
  'release',
  'markUnknown',
  'takeOver',
  'handBack',
  'addWaiter',
  'waitersToTell',
  'waitersTold',
] as const satisfies readonly RequiredStoreMethod[];
const everyRequiredStoreMethodIsChecked: Exclude<RequiredStoreMethod, (typeof REQUIRED_STORE_METHODS)[number]> extends never ? true : never = true;
void everyRequiredStoreMethodIsChecked;

const ACTIVITY_OPTION_NAMES = new Set(['scope', 'keyArgs', 'key', 'isAmbiguous', 'vendorDedup', 'reconcile', 'recordArguments']);

export function resolveOptions<Activities extends object>(options: IdempotencyOptions<Activities>): ResolvedOptions {
  if (options == null || typeof options !== 'object') {
    throw new IdempotencyConfigError('options', 'pass an object such as { store: new PostgresClaimStore({ pool }) }.');
  }
  const missing =
    options.store == null ? REQUIRED_STORE_METHODS : REQUIRED_STORE_METHODS.filter((method) => typeof (options.store as unknown as Record<string, unknown>)[method] !== 'function');
  // None of them: not a store at all (a pool given in its place, say).
  if (missing.length === REQUIRED_STORE_METHODS.length) {
    throw new IdempotencyConfigError('store', 'a ClaimStore is required, e.g. new PostgresClaimStore({ pool }).');
  }
  if (missing.length > 0) {
    throw new IdempotencyConfigError('store', `the ClaimStore given has no ${missing.join(', ')}: every store must (see ClaimStore).`);
  }
  const defaultScope = validScope('scope', options.scope ?? 'workflow');
  const leaseMs = nonNegative('leaseMs', options.leaseMs ?? 30_000);
  if (leaseMs < MIN_LEASE_MS) {
    throw new IdempotencyConfigError('leaseMs', `${leaseMs} ms is too short to renew reliably; use at least ${MIN_LEASE_MS} ms.`);
  }
  const guard = options.guard ?? 'all';
  if (guard !== 'all' && guard !== 'listed') {
    throw new IdempotencyConfigError('guard', `${JSON.stringify(guard)} is not 'all' or 'listed'.`);
  }
  const workerDefault: ResolvedActivitySettings = {
    guarded: guard === 'all',
    scope: defaultScope,
    keyArgs: undefined,
    key: undefined,
    isAmbiguous: undefined,
    vendorDedup: false,
    reconcile: undefined,
    recordArguments: optionalBoolean('recordArguments', options.recordArguments) ?? true,
  };
  // Per worker: a warning said once by each worker that meets its cause, never silenced by another's.
  const warned = new Set<string>();
  const warnOnce = (topic: string, warn: () => void) => {
    if (warned.has(topic)) return;
    warned.add(topic);
    warn();
  };
  const perActivity = new Map<string, ResolvedActivitySettings>();
  for (const [activityType, activityOptions] of Object.entries(options.activities ?? {})) {
    perActivity.set(activityType, resolveActivity(activityType, activityOptions as ActivityIdempotencyOptions | false, workerDefault));
  }
  return {
    store: options.store,
    payloadConverter: options.payloadConverter ?? defaultPayloadConverter,
    payloadCodecs: [...(options.payloadCodecs ?? [])],
    workerIdentity: validIdentity(options.workerIdentity ?? defaultWorkerIdentity()),
    recordRetryMs: nonNegative('recordRetryMs', options.recordRetryMs ?? 30_000),
    leaseMs,
    maxWaitMs: nonNegative('maxWaitMs', options.maxWaitMs ?? 60_000),
    reconcileTimeoutMs: nonNegative('reconcileTimeoutMs', options.reconcileTimeoutMs ?? 30_000),
    pollMs: Math.min(1_000, leaseMs / 4),
    auditLedger: resolveAudit(options as IdempotencyOptions),
    settingsFor: (activityType, log) => {
      const settings = perActivity.get(activityType);
      if (settings) return settings;
      const nearMiss = nearestName(activityType, [...perActivity.keys()]);
      // With guard: 'listed', a misspelled name would leave a write unguarded: refuse, never guess.
      if (guard === 'listed' && nearMiss !== undefined) {
        throw new IdempotencyConfigError(
          `activities.${nearMiss}`,
          `activity ${activityType} is not listed, but ${nearMiss} is, and guard is 'listed': a misspelling would leave ` +
            `${activityType} unguarded. Fix the name, or list ${activityType} (false if it is not a write).`,
        );
      }
      warnOfNearMissOnce(warnOnce, activityType, nearMiss, log);
      return workerDefault;
    },
    configuredActivities: [...perActivity.keys()],
    warnOnce,
  };
}

function resolveActivity(
  activityType: string,
  options: ActivityIdempotencyOptions | false,
  workerDefault: ResolvedActivitySettings,
): ResolvedActivitySettings {
  const prefix = `activities.${activityType}`;
  if (options === false) return { ...workerDefault, guarded: false };
  if (options == null || typeof options !== 'object') {
    throw new IdempotencyConfigError(prefix, 'expected an object of per-activity settings, or false for an activity that is not a write.');
  }
  for (const name of Object.keys(options)) {
    if (!ACTIVITY_OPTION_NAMES.has(name)) {
      throw new IdempotencyConfigError(
        `${prefix}.${name}`,
        `unknown setting; the known ones are ${[...ACTIVITY_OPTION_NAMES].join(', ')}.`,
      );
    }
  }
  return {
    guarded: true,
    scope: validScope(`${prefix}.scope`, options.scope ?? workerDefault.scope),
    keyArgs: optionalFunction(`${prefix}.keyArgs`, options.keyArgs),
    key: optionalFunction(`${prefix}.key`, options.key),
    isAmbiguous: optionalFunction(`${prefix}.isAmbiguous`, options.isAmbiguous),
    vendorDedup: optionalBoolean(`${prefix}.vendorDedup`, options.vendorDedup) ?? false,
    reconcile: optionalFunction(`${prefix}.reconcile`, options.reconcile as Reconciler | undefined),
    recordArguments: optionalBoolean(`${prefix}.recordArguments`, options.recordArguments) ?? workerDefault.recordArguments,
  };
}

/**
 * A misspelled name under `activities` silently leaves its activity on the worker's defaults
 * (no keyArgs, no vendorDedup). Hand-composed interceptors cannot see the worker's activities
 * up front (IdempotencyPlugin can, and refuses); this warns when the real name first runs.
 */
function warnOfNearMissOnce(warnOnce: ResolvedOptions['warnOnce'], activityType: string, nearMiss: string | undefined, log: Logger): void {
  if (nearMiss === undefined) return;
  warnOnce(`near-miss/${activityType}`, () =>
    log.warn(
      `Idempotency: activity ${activityType} has no settings, but activities.${nearMiss} names no activity that ran here; ` +
        `a misspelling? ${activityType} runs with the worker's defaults.`,
      { activityType, configured: nearMiss },
    ),
  );
}

/**
 * A configured name that looks like a misspelling of `name`: equal ignoring case, or one edit away
 * (a letter added, dropped, changed, or two swapped), two for names of more than ten letters.
 */
export function nearestName(name: string, candidates: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const candidate of candidates) {
    if (candidate === name) continue;
    const distance = candidate.toLowerCase() === name.toLowerCase() ? 0 : editDistance(candidate, name);
    const allowed = Math.max(candidate.length, name.length) > 10 ? 2 : 1;
    if (distance <= allowed && (!best || distance < best.distance)) best = { name: candidate, distance };
  }
  return best?.name;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let distance = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) distance = Math.min(distance, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = distance;
    }
  }
  return rows[a.length]![b.length]!;
}

function validScope(option: string, scope: unknown): Scope {
  if (!isScope(scope)) {
    throw new IdempotencyConfigError(option, `${JSON.stringify(scope)} is not a scope; use one of ${SCOPES.join(', ')}.`);
  }
  return scope;
}

function optionalFunction<F>(option: string, value: F | undefined): F | undefined {
  if (value !== undefined && typeof value !== 'function') {
    throw new IdempotencyConfigError(option, `expected a function, got ${typeof value}.`);
  }
  return value;
}

function resolveAudit(options: IdempotencyOptions): AuditLedger | undefined {
  const { audit } = options;
  if (audit === undefined || audit === false) return undefined;
  if (audit === true) {
    if (!options.store.auditLedger) {
      throw new IdempotencyConfigError('audit', 'this store keeps no ledger; pass an AuditLedger instead of true.');
    }
    return options.store.auditLedger();
  }
  if (typeof audit !== 'object' || typeof audit.recordStart !== 'function') {
    throw new IdempotencyConfigError('audit', 'expected true, false, or an AuditLedger.');
  }
  return audit;
}

function optionalBoolean(option: string, value: unknown): boolean | undefined {
  if (value !== undefined && typeof value !== 'boolean') {
    throw new IdempotencyConfigError(option, `expected true or false, got ${JSON.stringify(value)}.`);
  }
  return value;
}

function validIdentity(identity: unknown): string {
  if (typeof identity !== 'string' || identity.trim() === '') {
    throw new IdempotencyConfigError('workerIdentity', 'expected a non-empty string naming this worker process.');
  }
  return identity;
}

function nonNegative(option: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new IdempotencyConfigError(option, `expected a duration in milliseconds (>= 0), got ${String(value)}.`);
  }
  return value;
}
