/**
 * @temporalio/client is an optional peer dependency: only the commands that
 * talk to Temporal (the signal after a decision, prune's retention checks) load
 * it, so every other command works in a project that does not have it.
 */
import type { Connection } from '@temporalio/client';
import { TemporalUnavailableError } from './temporal-connection.js';
import type { TemporalTarget } from './temporal-connection.js';
import { errorMessage } from '../error-text.js';

export type TemporalClientModule = typeof import('@temporalio/client');

export async function loadClient(): Promise<TemporalClientModule> {
  try {
    return await import('@temporalio/client');
  } catch (error) {
    // ERR_MODULE_NOT_FOUND from import(); MODULE_NOT_FOUND if a build ever turns it into require().
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'MODULE_NOT_FOUND' && code !== 'ERR_MODULE_NOT_FOUND') throw error;
    throw new TemporalUnavailableError('@temporalio/client is not installed; add it to the project to let the CLI reach Temporal', 'client', {
      cause: error,
    });
  }
}

/** Connects within 5 s, or throws a TemporalUnavailableError that names where it tried. */
export async function connectTemporal(temporal: TemporalClientModule, target: TemporalTarget): Promise<Connection> {
  try {
    return await temporal.Connection.connect({ ...target.connectionOptions, connectTimeout: 5_000 });
  } catch (error) {
    throw new TemporalUnavailableError(`cannot connect to Temporal at ${target.description}: ${errorMessage(error)}`, 'connect', {
      cause: error,
    });
  }
}
