/**
 * A Temporal server for the demo and the tests: the one at TEMPORAL_ADDRESS,
 * or a local dev server (`temporal server start-dev`) on free ports.
 */
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { findTemporalCli } from './temporal-cli.js';
import { freePort } from './free-port.js';

export interface TemporalServer {
  readonly address: string;
  readonly namespace: string;
  /** Web UI address, when this process started the server with its UI or one was given. */
  readonly uiUrl: string | null;
  /** The `temporal` CLI that runs the dev server (an operator can use it too); null when not started here or downloaded. */
  readonly cliPath: string | null;
  /** The environment's client connection, for tests that drive workflows. */
  readonly env: TestWorkflowEnvironment;
  stop(): Promise<void>;
}

export async function startTemporal(options: { ui?: boolean; log?: (line: string) => void } = {}): Promise<TemporalServer> {
  const log = options.log ?? (() => undefined);
  const given = process.env['TEMPORAL_ADDRESS'];
  const namespace = process.env['TEMPORAL_NAMESPACE'] ?? 'default';
  if (given) {
    const env = await TestWorkflowEnvironment.createFromExistingServer({ address: given, namespace });
    return { address: given, namespace, uiUrl: process.env['TEMPORAL_UI_URL'] ?? null, cliPath: null, env, stop: () => env.teardown() };
  }
  const cli = await findTemporalCli(log);
  const uiPort = options.ui ? await freePort() : undefined;
  if (!cli) log('No temporal CLI and no Go: letting @temporalio/testing download the dev server.');
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      executable: cli ? { type: 'existing-path', path: cli } : { type: 'cached-download' },
      ip: '127.0.0.1',
      namespace,
      ...(uiPort ? { ui: true, uiPort } : {}),
      extraArgs: ['--log-level', 'error'],
    },
  });
  return {
    address: env.address,
    namespace,
    uiUrl: uiPort ? `http://127.0.0.1:${uiPort}` : null,
    cliPath: cli,
    env,
    stop: () => env.teardown(),
  };
}
