/**
 * The CLI's reasons Temporal cannot be used are library errors (issue 16):
 * `TemporalUnavailableError`, an `IdempotencyError` with a stable code and the
 * step that failed, the message exactly as the commands print it. A version
 * lookup that cannot find the package is a `CliError` ending in exit 1, as any
 * unexpected failure did. No services.
 */
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { IdempotencyError } from '../../src/errors.js';
import { EXIT } from '../../src/cli/errors.js';
import { failureOf } from '../../src/cli/failures.js';
import { connectTemporal, loadClient } from '../../src/cli/temporal-client.js';
import type { TemporalClientModule } from '../../src/cli/temporal-client.js';
import { TemporalUnavailableError, loadTemporalTarget } from '../../src/cli/temporal-connection.js';
import { packageVersion } from '../../src/cli/version.js';

describe('TemporalUnavailableError', () => {
  it('names a TEMPORAL_CONFIG_FILE that does not exist, as a settings failure', async () => {
    const missing = join(tmpdir(), 'no-such-dir', 'temporal.toml');
    const error = await loadTemporalTarget({ TEMPORAL_CONFIG_FILE: missing }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TemporalUnavailableError);
    expect(error).toBeInstanceOf(IdempotencyError);
    expect(error).toMatchObject({
      name: 'TemporalUnavailableError',
      code: 'temporal-unavailable',
      step: 'settings',
      message: `TEMPORAL_CONFIG_FILE names ${missing}, which does not exist`,
    });
  });

  it('says where it tried when the server does not answer, with the transport error as its cause', async () => {
    const refused = new Error('connect ECONNREFUSED 127.0.0.1:1');
    const temporal = { Connection: { connect: () => Promise.reject(refused) } } as unknown as TemporalClientModule;
    const target = { connectionOptions: { address: '127.0.0.1:1' }, namespace: undefined, description: '127.0.0.1:1 (plaintext)' };
    const error = await connectTemporal(temporal, target).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TemporalUnavailableError);
    expect(error).toMatchObject({
      step: 'connect',
      message: 'cannot connect to Temporal at 127.0.0.1:1 (plaintext): connect ECONNREFUSED 127.0.0.1:1',
      cause: refused,
    });
  });

  it('loads the client when it is installed', async () => {
    expect(typeof (await loadClient()).Connection.connect).toBe('function');
  });

  it('ends the CLI with exit 1 and its own message, should one ever escape a command', () => {
    const error = new TemporalUnavailableError('cannot connect to Temporal at x (plaintext): refused', 'connect');
    expect(failureOf(error)).toEqual({ code: EXIT.failure, message: 'cannot connect to Temporal at x (plaintext): refused' });
  });
});

describe('packageVersion', () => {
  it("reads this package's version", () => {
    expect(packageVersion()).toMatch(/^\d+\.\d+\.\d+/);
  });
});
