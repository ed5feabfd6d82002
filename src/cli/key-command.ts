/**
 * `temporal-idempotency key`: the key (hex and UUID) and the fingerprint a worker claims a call under,
 * computed from its activity type, scope, ids and arguments with the schema's key salt: for an operator
 * who has the arguments but not the key, or another service that must find a call's claim. The
 * arguments are JSON, as the default payload converter carries them (docs/key-spec.md).
 */
import type { Claim, ClaimOperations } from '../store/index.js';
import { ClaimNotFoundError } from '../store/index.js';
import { InvalidKeyInputError, SCOPES, callKeysOf, canonicalize, isScope, keyToUuid, scopeMaterial } from '../key/index.js';
import { CliError, EXIT } from './errors.js';
import { printRecord } from './output.js';

export interface KeyRequest {
  readonly activityType: string | undefined;
  readonly namespace: string | undefined;
  readonly scope: string | undefined;
  readonly workflowId: string | undefined;
  readonly runId: string | undefined;
  readonly activityId: string | undefined;
  /** The activity's arguments as a JSON array, or what its keyArgs returns, as JSON. */
  readonly args: string | undefined;
  readonly customKey: string | undefined;
}

export async function keyOfCall(operations: ClaimOperations, request: KeyRequest, json: boolean): Promise<number> {
  const { activityType, scope = 'workflow' } = request;
  if (!activityType) throw new CliError('key needs --activity TYPE: the activity type the worker runs.', EXIT.usage);
  if (!isScope(scope)) throw new CliError(`--scope ${JSON.stringify(scope)} is not one of ${SCOPES.join(', ')}.`, EXIT.usage);
  if (request.customKey === '') throw new CliError("--custom-key is empty: give the string the activity type's key() returns.", EXIT.usage);
  if (request.args === undefined) {
    throw new CliError("key needs --args JSON: the activity's arguments as a JSON array (or what its keyArgs returns).", EXIT.usage);
  }
  let semanticArgs: unknown;
  try {
    semanticArgs = JSON.parse(request.args);
  } catch (error) {
    throw new CliError(`--args is not JSON: ${(error as Error).message}.`, EXIT.usage);
  }
  const namespace = request.namespace ?? process.env['TEMPORAL_NAMESPACE'] ?? 'default';
  // Without a workflow, the call is an activity started on its own: keyed on its activity id, whatever the scope.
  const standalone = request.workflowId === undefined && request.runId === undefined;
  const site = standalone ? { activityId: request.activityId ?? '' } : { workflowId: request.workflowId ?? '', runId: request.runId ?? '', activityId: request.activityId ?? '' };
  const material = scopeMaterial(scope, site);
  const needs = { workflow: ['--workflow'], run: ['--workflow', '--run'], call: ['--workflow', '--run', '--activity-id'], standalone: ['--activity-id'] };
  const missing = request.customKey === undefined ? needs[material.scope].filter((flag) => !given(request, flag)) : [];
  if (missing.length > 0) {
    throw new CliError(
      `--scope ${scope} keys on ${needs[material.scope].join(', ')}: give ${missing.join(', ')} (without --workflow and --run, the ` +
        'call is an activity started outside a workflow, keyed on --activity-id).',
      EXIT.usage,
    );
  }
  const salt = await operations.keySalt();
  let argsText: string;
  try {
    argsText = canonicalize(semanticArgs, 'args');
  } catch (error) {
    if (error instanceof InvalidKeyInputError) throw new CliError(`--args: ${error.message}`, EXIT.usage);
    throw error;
  }
  const identity = request.customKey !== undefined ? { customKey: request.customKey } : { scopeMaterial: material };
  const { key, fingerprint } = callKeysOf({ namespace, activityType, ...identity }, argsText, salt);
  const claim = await operations.show(key).catch((error: unknown) => {
    if (error instanceof ClaimNotFoundError) return null;
    throw error;
  });
  printRecord(
    {
      key,
      key_uuid: keyToUuid(key),
      fingerprint,
      scope: request.customKey !== undefined ? 'key() (custom)' : material.scope,
      claim: claim ? claimState(claim, fingerprint) : 'none in this schema',
    },
    json,
  );
  return EXIT.ok;
}

function given(request: KeyRequest, flag: string): boolean {
  const value = { '--workflow': request.workflowId, '--run': request.runId, '--activity-id': request.activityId }[flag];
  return value !== undefined && value !== '';
}

/** The claim under the key, and whether it was made with these arguments. */
function claimState(claim: Claim, fingerprint: string): string {
  const sameArguments = claim.fingerprint === fingerprint ? 'with these arguments' : 'with OTHER arguments (its fingerprint differs)';
  return `${claim.state}, ${sameArguments}: temporal-idempotency show ${claim.key}`;
}
