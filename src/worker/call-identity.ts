/**
 * Turns one activity execution into the key and fingerprint of its action.
 * Computed once, before the activity runs, so an activity that mutates its
 * arguments cannot change the key it is recorded under.
 */
import type { Info } from '@temporalio/activity';
import { InvalidKeyInputError, deriveCustomKey, deriveKey, fingerprintArgs, scopeMaterial } from '../key/index.js';
import type { ClaimRequest } from '../store/index.js';
import type { ResolvedActivitySettings } from './options.js';

export function claimRequestFor(
  info: Info,
  args: readonly unknown[],
  settings: ResolvedActivitySettings,
  claimedBy: string,
): ClaimRequest {
  const semanticArgs = settings.keyArgs ? callUserFunction('keyArgs', () => settings.keyArgs!(args)) : args;
  const fingerprint = fingerprintArgs(semanticArgs);
  const workflowId = info.workflowExecution?.workflowId ?? null;
  const runId = info.workflowExecution?.runId ?? null;
  return {
    key: keyFor(info, args, semanticArgs, settings),
    fingerprint,
    namespace: info.namespace,
    activityType: info.activityType,
    workflowId,
    runId,
    activityId: info.activityId,
    attempt: info.attempt,
    claimedBy,
  };
}

function keyFor(info: Info, args: readonly unknown[], semanticArgs: unknown, settings: ResolvedActivitySettings): string {
  if (settings.key) {
    const customKey = callUserFunction('key', () => settings.key!({ args, info }));
    if (typeof customKey !== 'string' || customKey === '') {
      throw new InvalidKeyInputError('key()', `the custom key function returned ${describe(customKey)}, not a non-empty string`);
    }
    return deriveCustomKey({ namespace: info.namespace, activityType: info.activityType, customKey });
  }
  return deriveKey({
    namespace: info.namespace,
    scopeMaterial: scopeMaterial(settings.scope, {
      workflowId: info.workflowExecution?.workflowId,
      runId: info.workflowExecution?.runId,
      activityId: info.activityId,
    }),
    activityType: info.activityType,
    semanticArgs,
  });
}

/** A user's key function that throws is bad key input: it fails the same way on every attempt. */
function callUserFunction<T>(name: string, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof InvalidKeyInputError) throw error;
    throw new InvalidKeyInputError(`${name}()`, `it threw ${describe(error)}`);
  }
}

function describe(value: unknown): string {
  if (value instanceof Error) return `${value.name}: ${value.message}`;
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}
