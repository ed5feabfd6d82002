/**
 * Before `resolve` records an operator's result: the workflow receives exactly
 * that value, as the activity's return value. So it is held against what the
 * activity type returned before (its recorded results, by shape) and against
 * the activity type's own `validateResult` from --worker-config; a mismatch is
 * refused with both shapes shown, unless --force.
 */
import type { Claim, ClaimOperations } from '../store/index.js';
import type { ResultCodec } from '../worker/result-codec.js';
import { CliError, EXIT } from './errors.js';
import { fits, shapeOf, shapeText } from './result-shape.js';
import type { Shape } from './result-shape.js';
import type { LoadedWorkerConfig } from './worker-config.js';
import { errorMessage } from '../error-text.js';

/** What the result was checked against, for the operator's record. */
export async function checkResolvedResult(
  operations: ClaimOperations,
  claim: Claim,
  value: unknown,
  config: LoadedWorkerConfig,
  force: boolean,
): Promise<string> {
  const type = claim.activityType;
  const validated = validate(config, type, value);
  if ('refused' in validated && !force) {
    throw new CliError(
      `--worker-config's validateResult for ${type} refuses this result (${validated.refused}). The workflow receives exactly ` +
        `the value you give, as ${type}'s return value. Nothing was changed; --force records it anyway.`,
      EXIT.usage,
    );
  }
  const earlier = await decodedShapes(await operations.recordedResults(type, claim.key), config.codec);
  const given = shapeOf(value);
  const checks = ['passed' in validated ? `validateResult of ${type}` : null];
  if (earlier.length === 0) return [...checks, `no earlier result of ${type} to compare with`].filter(Boolean).join('; ');
  if (!earlier.some((known) => fits(given, known)) && !force) {
    const seen = [...new Set(earlier.map(shapeText))];
    throw new CliError(
      `${type} returned ${seen.slice(0, 3).join(' or ')} before (${earlier.length} recorded result(s)); the result ` +
        `given is ${shapeText(given)}. The workflow receives exactly the value you give, as ${type}'s return value: ` +
        `give what the activity returns (not the vendor's own record), e.g. from its code. Nothing was changed; ` +
        '--force records it anyway.',
      EXIT.usage,
    );
  }
  return [...checks, `the shape of ${earlier.length} earlier result(s) of ${type}`].filter(Boolean).join('; ');
}

/** Whether the activity type's validateResult passed the value (or there is none), or why it refuses it. */
function validate(config: LoadedWorkerConfig, activityType: string, value: unknown): { passed: true } | { none: true } | { refused: string } {
  const validateResult = config.activities?.[activityType]?.validateResult;
  if (!validateResult) return { none: true };
  try {
    return validateResult(value) === false ? { refused: 'it returned false' } : { passed: true };
  } catch (error) {
    return { refused: errorMessage(error) };
  }
}

async function decodedShapes(payloads: Awaited<ReturnType<ClaimOperations['recordedResults']>>, codec: ResultCodec): Promise<Shape[]> {
  const shapes: Shape[] = [];
  for (const payload of payloads) {
    try {
      shapes.push(shapeOf(await codec.decode(payload)));
    } catch {
      // A result this CLI cannot decode (a codec it was not given) tells nothing about shape.
    }
  }
  return shapes;
}
