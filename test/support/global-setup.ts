/**
 * Starts the real services once for the whole run: Postgres (embedded, or
 * DATABASE_URL) and a Temporal dev server (or TEMPORAL_ADDRESS). Also bundles
 * the workflow code once, so each worker, in-process or spawned, skips webpack.
 */
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DefaultLogger, bundleWorkflowCode } from '@temporalio/worker';
import type {} from 'vitest';
import type { TestProject } from 'vitest/node';
import { EMBEDDED_POSTGRES_PARENT, reapEmbeddedPostgres, startPostgres } from '../../dev/postgres.js';
import type { PostgresServer } from '../../dev/postgres.js';
import { startTemporal } from '../../dev/temporal-server.js';
import type { TemporalServer } from '../../dev/temporal-server.js';
import { workflowInterceptorModules } from '../../dev/workflow-interceptors.js';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    temporalAddress: string;
    /** The dev server's Web UI, or null when the tests use a TEMPORAL_ADDRESS without TEMPORAL_UI_URL. */
    temporalUiUrl: string | null;
    workflowBundlePath: string;
  }
}

let postgres: PostgresServer | undefined;
let temporal: TemporalServer | undefined;
/** This run's own parent for embedded servers: the files' servers start there (their processes inherit it). */
let embeddedParent: string | undefined;

export async function setup(project: TestProject): Promise<void> {
  const log = (line: string) => console.log(`[test setup] ${line}`);
  const outputDir = fileURLToPath(new URL('../../test-output/', import.meta.url));
  await mkdir(outputDir, { recursive: true });
  embeddedParent = await mkdtemp(join(tmpdir(), 'temporal-idempotency-run-'));
  await chmod(embeddedParent, 0o755); // the `postgres` user, when run as root, must reach its data directories
  process.env[EMBEDDED_POSTGRES_PARENT] = embeddedParent;
  const [pg, server, bundle] = await Promise.all([
    startPostgres(),
    startTemporal({ ui: true, log }),
    bundleWorkflowCode({
      workflowsPath: fileURLToPath(new URL('./workflows.ts', import.meta.url)),
      workflowInterceptorModules,
      logger: new DefaultLogger('WARN'),
    }),
  ]);
  postgres = pg;
  temporal = server;
  const workflowBundlePath = `${outputDir}workflow-bundle.js`;
  await writeFile(workflowBundlePath, bundle.code);
  log(`Postgres ${postgres.embedded ? '(embedded)' : '(DATABASE_URL)'}, Temporal at ${temporal.address}`);
  project.provide('databaseUrl', postgres.connectionString);
  project.provide('temporalAddress', temporal.address);
  project.provide('temporalUiUrl', temporal.uiUrl);
  project.provide('workflowBundlePath', workflowBundlePath);
}

export async function teardown(): Promise<void> {
  await temporal?.stop();
  await postgres?.stop();
  if (embeddedParent) {
    // A server a file started and never stopped (its test timed out and its process ended): kill it, say so.
    const leftRunning = await reapEmbeddedPostgres(embeddedParent);
    if (leftRunning.length > 0) console.log(`[test teardown] stopped ${leftRunning.length} embedded Postgres left running by a test: pids ${leftRunning.join(', ')}`);
    await rm(embeddedParent, { recursive: true, force: true });
  }
}
