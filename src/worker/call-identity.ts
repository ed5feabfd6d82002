/**
 * Turns one activity execution into the key and fingerprint of its action.
 * Computed once, before the activity runs, so an activity that mutates its
 * arguments cannot change the key it is recorded under.
 */
import type { Context, Info } from '@temporalio/activity';
import { defaultPayloadConverter } from '@temporalio/common';
import type { Payload } from '@temporalio/common';
import { InvalidKeyInputError, callKeysOf, canonicalize, scopeMaterial } from '../key/index.js';
import type { CallKeys, KeySalt } from '../key/index.js';
import { randomUUID } from 'node:crypto';
import type { ClaimRequest, LedgerCall } from '../store/index.js';
import { RESUMABLE_EARLIER_HEADER, RESUME_KEY_HEADER, isResumableEarlier, isResumeKey } from '../call-headers.js';
import type { ResumeKey, ResumeMatch } from '../call-headers.js';
import { IdempotencyConfigError } from '../errors.js';
import { errorClass } from '../error-text.js';
import type { ResolvedActivitySettings } from './options.js';

/**
 * Past its start-to-close timeout Temporal has timed the attempt out, and the SDK cancels it at
 * its next heartbeat; this grace covers that, and a clock a little behind. An activity that
 * neither heartbeats nor honours cancellation can run longer: that is what `--force` is for.
 */
export const ATTEMPT_DEADLINE_GRACE_MS = 30_000;

export interface CallIdentity {
  readonly request: ClaimRequest;
  /**
   * Made by `resumable()` on a pass after an operator's decision: `same` in the refused call's place
   * (the refused key is looked up first, and its record must hold this call's arguments), `other` elsewhere.
   */
  readonly resumed: ResumeMatch | undefined;
  /** The canonical text of the semantic arguments: what the fingerprint hashes. */
  readonly argsText: string;
}

export function callIdentityFor(
  info: Info,
  args: readonly unknown[],
  headers: Readonly<Record<string, Payload>>,
  settings: ResolvedActivitySettings,
  claimedBy: string,
  salt: KeySalt,
): CallIdentity {
  checkStorable(callerOf(info, claimedBy));
  const resume = resumeKeyFor(info, headers);
  const inRefusedPlace = resume?.match === 'same';
  if (!inRefusedPlace && info.isLocal && settings.scope === 'call' && !settings.key) {
    throw new IdempotencyConfigError(
      `activities.${info.activityType}.scope`,
      `'call' scope cannot key the local activity ${info.activityType}: when its retry backoff exceeds ` +
        `localRetryThreshold the SDK schedules it again with a new activity id, so the retry would get a new key ` +
        `and run again. Use 'run' or 'workflow' scope for it, or run it as a regular activity.`,
    );
  }
  if (resume?.match === 'other' && settings.scope === 'call' && !settings.key) {
    throw new IdempotencyConfigError(
      `activities.${info.activityType}.scope`,
      `'call' scope keys ${info.activityType} on its activity id, which is new each time resumable() calls its ` +
        `closure again after an operator's decision: a ${info.activityType} made on an earlier pass would run again ` +
        `under a new key. Refused instead. Give each call-scoped activity its own resumable(), or use 'workflow' ` +
        `scope or a key() for it.`,
    );
  }
  const semanticArgs = settings.keyArgs ? semanticArgsFrom(settings.keyArgs, args) : args;
  const argsText = canonicalize(semanticArgs, 'args');
  const { key, fingerprint } = keysFor(info, argsText, settings, customKeyFor(info, args, settings), salt);
  const request: ClaimRequest = {
    ...callerOf(info, claimedBy),
    key,
    fingerprint,
    // A resumed call is the refused one: the refused key's record decides, so it is looked up first. Released,
    // the call is claimed like any other, under its own key, so a later call finds this one's record.
    ...(inRefusedPlace && resume!.key !== key ? { refusedKey: resume!.key } : {}),
    deadlineMs: info.startToCloseTimeoutMs > 0 ? info.startToCloseTimeoutMs + ATTEMPT_DEADLINE_GRACE_MS : null,
  };
  return { request, resumed: resume?.match, argsText };
}

/**
 * Inside one `resumable()`, a `call`-scoped write beside other writes would run again under a new key
 * on the pass after an operator's decision (each call there gets a new activity id). Refused on the
 * first pass already, before this call runs, so it shows in development rather than mid-incident.
 * `settingsOf` gives this worker's settings for the earlier types (false: not guarded here).
 */
export function checkCallScopeAlone(
  info: Info,
  headers: Readonly<Record<string, Payload>>,
  settings: ResolvedActivitySettings,
  settingsOf: (activityType: string) => ResolvedActivitySettings,
): void {
  const payload = headers[RESUMABLE_EARLIER_HEADER];
  if (!payload) return;
  const value = decodedHeader(RESUMABLE_EARLIER_HEADER, payload);
  if (!isResumableEarlier(value)) throw new InvalidKeyInputError(`headers["${RESUMABLE_EARLIER_HEADER}"]`, 'it is not { activityTypes: string[] }');
  const earlierWrites = value.activityTypes.filter((activityType) => settingsOf(activityType).guarded);
  if (earlierWrites.length === 0) return;
  const isCallScoped = (of: ResolvedActivitySettings) => of.guarded && of.scope === 'call' && !of.key;
  const offending = isCallScoped(settings) ? info.activityType : earlierWrites.find((activityType) => isCallScoped(settingsOf(activityType)));
  if (offending === undefined) return;
  throw new IdempotencyConfigError(
    `activities.${offending}.scope`,
    `'call' scope keys ${offending} on its activity id, and one resumable() here makes it beside other writes ` +
      `(${[...earlierWrites, info.activityType].join(', ')}): after an operator's ` +
      `decision resumable() calls them all again with new activity ids, and a call-scoped write made on the first pass ` +
      `would run again. Refused before ${info.activityType} ran. Give each call-scoped activity its own resumable(), ` +
      `or use 'workflow' scope or a key() for it.`,
  );
}

/** A ledger entry's identity for this attempt's call under `key`, made by `worker`. */
export function ledgerCallOf(info: Info, key: string, worker: string): LedgerCall {
  return {
    callId: randomUUID(),
    key,
    activityType: info.activityType,
    workflowId: info.workflowExecution?.workflowId ?? null,
    runId: info.workflowExecution?.runId ?? null,
    activityId: info.activityId,
    attempt: info.attempt,
    worker,
  };
}

/** Which attempt of which activity, in which workflow, on which worker: the parts of a claim that are not its key. */
export function callerOf(
  info: Info,
  claimedBy: string,
): Pick<ClaimRequest, 'namespace' | 'activityType' | 'workflowId' | 'runId' | 'activityId' | 'attempt' | 'claimedBy'> {
  return {
    namespace: info.namespace,
    activityType: info.activityType,
    workflowId: info.workflowExecution?.workflowId ?? null,
    runId: info.workflowExecution?.runId ?? null,
    activityId: info.activityId,
    attempt: info.attempt,
    claimedBy,
  };
}

/**
 * Postgres `text` cannot hold U+0000 (SQLSTATE 22021), though Temporal accepts it in a workflow id: such
 * a call could never be claimed, and each attempt would be told the store is unavailable, retryably, for
 * ever. Refused at once instead, naming the field; nothing is claimed or called.
 */
function checkStorable(caller: ReturnType<typeof callerOf>): void {
  for (const [field, value] of Object.entries(caller)) {
    if (typeof value === 'string' && value.includes('\u0000')) {
      throw new InvalidKeyInputError(field, 'it contains U+0000, which Postgres cannot store, so no claim can be made for this call');
    }
  }
}

/** The refused call's key, on an activity `resumable()` schedules on a pass after an operator's decision. */
function resumeKeyFor(info: Info, headers: Readonly<Record<string, Payload>>): ResumeKey | undefined {
  const payload = headers[RESUME_KEY_HEADER];
  if (!payload) return undefined;
  const value = decodedHeader(RESUME_KEY_HEADER, payload);
  if (!isResumeKey(value)) {
    throw new InvalidKeyInputError(`headers["${RESUME_KEY_HEADER}"]`, 'it is not { key: <64 hex digits>, activityType }');
  }
  // Only a call of the refused type can sit in its place (a forged header cannot say otherwise).
  const match = value.match === 'other' || value.activityType !== info.activityType ? 'other' : 'same';
  return { ...value, match };
}

/**
 * A header `resumable()` set. One that cannot be decoded is bad key input (it fails alike on every
 * attempt), named by the error's class: the refusal lands in history, and the header is not ours to quote.
 */
function decodedHeader(name: string, payload: Payload): unknown {
  try {
    return defaultPayloadConverter.fromPayload(payload);
  } catch (error) {
    throw new InvalidKeyInputError(`headers["${name}"]`, `it cannot be decoded (${errorClass(error)})`);
  }
}

/** `undefined` is refused: a forgotten `return` would otherwise key every call of the type alike. */
function semanticArgsFrom(keyArgs: (args: readonly unknown[]) => unknown, args: readonly unknown[]): unknown {
  const semanticArgs = callUserFunction('keyArgs', () => keyArgs(args));
  if (semanticArgs === undefined) {
    throw new InvalidKeyInputError(
      'keyArgs()',
      'it returned undefined, which would give every call of this activity type one key (a missing `return`?); ' +
        'return the part of the arguments that defines the action',
    );
  }
  return semanticArgs;
}

function keysFor(info: Info, argsText: string, settings: ResolvedActivitySettings, customKey: string | undefined, salt: KeySalt): CallKeys {
  const { namespace, activityType } = info;
  if (customKey !== undefined) return callKeysOf({ namespace, activityType, customKey }, argsText, salt);
  const site = { workflowId: info.workflowExecution?.workflowId, runId: info.workflowExecution?.runId, activityId: info.activityId };
  return callKeysOf({ namespace, activityType, scopeMaterial: scopeMaterial(settings.scope, site) }, argsText, salt);
}

/** The user's own key for the action, when the activity type has a `key` function. */
function customKeyFor(info: Info, args: readonly unknown[], settings: ResolvedActivitySettings): string | undefined {
  if (!settings.key) return undefined;
  const customKey = callUserFunction('key', () => settings.key!({ args, info }));
  if (typeof customKey !== 'string' || customKey === '') {
    throw new InvalidKeyInputError('key()', `the custom key function returned ${describeType(customKey)}, not a non-empty string`);
  }
  return customKey;
}

/** A user's key function that throws is bad key input: it fails the same way on every attempt. */
function callUserFunction<T>(name: string, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof InvalidKeyInputError) throw error;
    // The error's own message may carry argument values: only its class goes into the refusal.
    throw new InvalidKeyInputError(`${name}()`, `it threw ${errorClass(error)}`);
  }
}

/** A value described by its type alone: key material must not reach messages, history or logs. */
function describeType(value: unknown): string {
  if (typeof value === 'string') return value === '' ? 'an empty string' : `a string of ${value.length} characters`;
  if (value === null) return 'null';
  return `a value of type ${typeof value}`;
}

/** Workflow scope keys on the workflow id, which every run of a cron workflow shares: said once per worker and type. */
export function warnOfMergedCronRuns(context: Context, settings: ResolvedActivitySettings, warnOnce: (topic: string, warn: () => void) => void): void {
  const { workflowType, activityType } = context.info;
  if (settings.scope !== 'workflow' || settings.key) return;
  warnOnce(`cron/${workflowType}/${activityType}`, () =>
    context.log.warn(
      `Idempotency: cron workflow ${workflowType} calls ${activityType} on workflow scope, which keys on the workflow id: ` +
        `every run of the schedule shares one key, so only the first run's call goes out and later runs get its result. ` +
        `Use scope 'run' for ${activityType}, or a key() that includes what makes each run's call its own.`,
      { workflowType, activityType },
    ),
  );
}
