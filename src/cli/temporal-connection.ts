/**
 * Where the CLI signals workflows: the settings the `temporal` CLI uses, read
 * by @temporalio/envconfig: a profile of the config file (TEMPORAL_CONFIG_FILE,
 * else ~/.config/temporalio/temporal.toml; TEMPORAL_PROFILE, else `default`),
 * overridden by TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY,
 * TEMPORAL_TLS* and TEMPORAL_GRPC_META_*.
 *
 * @temporalio/envconfig is an optional peer dependency, loaded only here: it
 * pins @temporalio/common to its own version, so it must be installed at the
 * project's SDK version or it brings a second copy. Without it the CLI reads
 * TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE alone (plaintext), and refuses to
 * guess when anything only envconfig understands is set.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir, platform } from 'node:os';
import { isAbsolute, join } from 'node:path';
import type { ConnectionOptions } from '@temporalio/client';
import { IdempotencyError } from '../errors.js';
import { errorMessage } from '../error-text.js';

/** What the CLI was doing when Temporal could not be used. */
export type TemporalStep = 'settings' | 'client' | 'connect' | 'retention';

/**
 * Temporal cannot be used by the CLI: its settings are wrong, the client package is missing, the server
 * does not answer, or a namespace does not say its retention. The commands that meet it carry on without
 * Temporal and say why (the signal is reported undelivered, `prune` keeps what it cannot check), so it
 * never decides an exit code by itself.
 */
export class TemporalUnavailableError extends IdempotencyError {
  override readonly name = 'TemporalUnavailableError';
  readonly code = 'temporal-unavailable';
  constructor(
    message: string,
    /** Which step failed. */
    readonly step: TemporalStep,
    options?: { readonly cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface TemporalTarget {
  readonly connectionOptions: Pick<ConnectionOptions, 'address' | 'tls' | 'apiKey' | 'metadata'>;
  /** The profile's (or TEMPORAL_NAMESPACE's) namespace: for a workflow named with --workflow-id. */
  readonly namespace: string | undefined;
  /** Where and how, for messages: never the API key or a certificate. */
  readonly description: string;
}

/** Throws a TemporalUnavailableError naming the setting that is wrong (a missing profile, an unreadable file, a missing package). */
export async function loadTemporalTarget(env: NodeJS.ProcessEnv = process.env): Promise<TemporalTarget> {
  const configFile = env['TEMPORAL_CONFIG_FILE'];
  // envconfig passes over a config file that does not exist: a typo would signal the wrong server.
  if (configFile && !existsSync(configFile)) {
    throw new TemporalUnavailableError(`TEMPORAL_CONFIG_FILE names ${configFile}, which does not exist`, 'settings');
  }
  const envconfig = await loadEnvconfig();
  if (!envconfig) return plainTarget(env);
  let loaded: ClientConnectConfig;
  try {
    loaded = envconfig.loadClientConnectConfig({ overrideEnvVars: setOnly(env) });
  } catch (error) {
    throw new TemporalUnavailableError(
      `the Temporal connection settings (profile and TEMPORAL_* variables) are not usable: ${errorMessage(error)}`,
      'settings',
      { cause: error },
    );
  }
  const { address, tls, apiKey, metadata } = loaded.connectionOptions;
  const connectionOptions = { address, tls, apiKey, metadata };
  return { connectionOptions, namespace: loaded.namespace, description: describe(connectionOptions, env) };
}

/** Without envconfig: the address and namespace variables, when nothing else asks for more. */
function plainTarget(env: NodeJS.ProcessEnv): TemporalTarget {
  const needsEnvconfig = Object.keys(env).filter((name) => /^TEMPORAL_(API_KEY|PROFILE|CONFIG_FILE|TLS|GRPC_META_)/.test(name) && env[name]);
  const defaultFile = defaultConfigFile(env);
  if (defaultFile && existsSync(defaultFile)) needsEnvconfig.push(defaultFile);
  if (needsEnvconfig.length > 0) {
    throw new TemporalUnavailableError(
      `${needsEnvconfig.join(', ')} need @temporalio/envconfig, which is not installed: add it at your SDK's version ` +
        `(npm install @temporalio/envconfig@${clientVersion() ?? '<your @temporalio/client version>'}; npm has none for some ` +
        `versions, 1.20.1 and 1.21.x among them: then move your @temporalio/* packages to one it has), or unset them and ` +
        `use TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE alone (no TLS)`,
      'settings',
    );
  }
  const connectionOptions = { address: env['TEMPORAL_ADDRESS'] || undefined };
  return { connectionOptions, namespace: env['TEMPORAL_NAMESPACE'] || undefined, description: describe(connectionOptions, env) };
}

function describe(options: TemporalTarget['connectionOptions'], env: NodeJS.ProcessEnv): string {
  const how = [options.tls ? 'TLS' : 'plaintext', ...(options.apiKey ? ['API key'] : []), ...(env['TEMPORAL_PROFILE'] ? [`profile ${env['TEMPORAL_PROFILE']}`] : [])];
  return `${options.address ?? 'localhost:7233'} (${how.join(', ')})`;
}

/** The file envconfig reads when TEMPORAL_CONFIG_FILE is not set (its own rule, per platform). */
function defaultConfigFile(env: NodeJS.ProcessEnv): string | undefined {
  const home = env['HOME'] || homedir();
  switch (platform()) {
    case 'win32':
      return env['APPDATA'] ? join(env['APPDATA'], 'temporalio', 'temporal.toml') : undefined;
    case 'darwin':
      return join(home, 'Library', 'Application Support', 'temporalio', 'temporal.toml');
    default: {
      const xdg = env['XDG_CONFIG_HOME'];
      if (xdg && !isAbsolute(xdg)) return undefined;
      return join(xdg || join(home, '.config'), 'temporalio', 'temporal.toml');
    }
  }
}

/** The variables that are set: an empty TEMPORAL_ADDRESS is unset, as in a shell, not an empty address. */
function setOnly(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => Boolean(entry[1])));
}

/** The part of @temporalio/envconfig used here, typed locally: a project without it must still typecheck. */
interface Envconfig {
  loadClientConnectConfig(options: { overrideEnvVars?: Record<string, string> }): ClientConnectConfig;
}

interface ClientConnectConfig {
  readonly connectionOptions: TemporalTarget['connectionOptions'];
  readonly namespace?: string | undefined;
}

const ENVCONFIG = '@temporalio/envconfig';

async function loadEnvconfig(): Promise<Envconfig | undefined> {
  try {
    const module = (await import(ENVCONFIG)) as Partial<Envconfig> & { default?: Envconfig };
    // A CommonJS package: its names, or (should Node not detect them) its module.exports as default.
    return module.loadClientConnectConfig ? (module as Envconfig) : module.default;
  } catch (error) {
    // ERR_MODULE_NOT_FOUND from import(); MODULE_NOT_FOUND if a build ever turns it into require().
    // Only when envconfig itself is missing: one of its own dependencies missing is an error to show.
    const code = (error as NodeJS.ErrnoException).code;
    const missing = (code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') && errorMessage(error).includes("'@temporalio/envconfig'");
    if (missing) return undefined;
    throw error;
  }
}

function clientVersion(): string | undefined {
  try {
    return (createRequire(import.meta.url)('@temporalio/client/package.json') as { version?: string }).version;
  } catch {
    return undefined;
  }
}
