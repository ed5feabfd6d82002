/**
 * What the CLI must share with the workers to write records they accept and to
 * read what they wrote: the payload converter and codecs (results and notes are
 * encoded with them) and the record secrets (records are signed and checked with them).
 *
 * `--worker-config PATH` (or TEMPORAL_IDEMPOTENCY_WORKER_CONFIG) names a module
 * whose default export is that object, or a function returning it (so it can
 * fetch the secret from a secret manager). TEMPORAL_IDEMPOTENCY_SECRET gives the
 * secret alone.
 */
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { defaultPayloadConverter } from '@temporalio/common';
import type { PayloadCodec, PayloadConverter } from '@temporalio/common';
import type { PreviousSecret, SecretMaterial } from '../store/index.js';
import { ResultCodec } from '../worker/result-codec.js';
import { CliError, EXIT } from './errors.js';
import { errorMessage } from '../error-text.js';

/** Per activity type: what `resolve` checks an operator's result with before recording it. */
export interface ActivityResultCheck {
  /** Throws (or returns false) when `value` is not what the activity returns; its message is shown. */
  readonly validateResult?: (value: unknown) => unknown;
}

export interface WorkerConfig {
  readonly payloadConverter?: PayloadConverter;
  readonly payloadCodecs?: readonly PayloadCodec[];
  readonly secret?: SecretMaterial;
  readonly previousSecrets?: readonly PreviousSecret[];
  readonly activities?: Readonly<Record<string, ActivityResultCheck>>;
}

export interface LoadedWorkerConfig {
  readonly codec: ResultCodec;
  readonly secret: SecretMaterial | undefined;
  readonly previousSecrets: readonly PreviousSecret[] | undefined;
  readonly activities: Readonly<Record<string, ActivityResultCheck>> | undefined;
}

export async function loadWorkerConfig(path: string | undefined): Promise<LoadedWorkerConfig> {
  const config = path ? await importConfig(path) : {};
  const secret = config.secret ?? process.env['TEMPORAL_IDEMPOTENCY_SECRET'] ?? undefined;
  return {
    codec: new ResultCodec(config.payloadConverter ?? defaultPayloadConverter, [...(config.payloadCodecs ?? [])]),
    secret: secret === '' ? undefined : secret,
    previousSecrets: config.previousSecrets,
    activities: config.activities,
  };
}

async function importConfig(path: string): Promise<WorkerConfig> {
  let module: { default?: unknown };
  try {
    module = (await import(pathToFileURL(isAbsolute(path) ? path : resolve(path)).href)) as { default?: unknown };
  } catch (error) {
    throw new CliError(`--worker-config ${path} could not be loaded: ${errorMessage(error)}`, EXIT.usage);
  }
  const exported = typeof module.default === 'function' ? await (module.default as () => unknown)() : module.default;
  if (typeof exported !== 'object' || exported === null) {
    throw new CliError(
      `--worker-config ${path} must export default { payloadConverter?, payloadCodecs?, secret?, previousSecrets?, activities? } ` +
        '(or a function returning it): the settings your workers give idempotencyInterceptors and the store.',
      EXIT.usage,
    );
  }
  return exported as WorkerConfig;
}
