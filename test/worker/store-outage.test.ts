/**
 * Postgres down before the call: the activity must not run without a durable
 * claim. It fails retryably, and once Postgres is back it runs, once.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdempotencyStoreUnavailable, PostgresClaimStore, idempotencyInterceptors, migrate } from '../../src/index.js';
import { startPostgres } from '../../dev/postgres.js';
import type { PostgresServer } from '../../dev/postgres.js';
import { pendingActivityFailure, uniqueName, useTemporal } from '../support/temporal.js';

const temporal = useTemporal();
// Its own server: stopping the shared one would break the other test files.
let postgres: PostgresServer;
let pool: pg.Pool;
beforeAll(async () => {
  postgres = await startPostgres({ forceEmbedded: true });
  pool = new pg.Pool({ connectionString: postgres.connectionString, connectionTimeoutMillis: 2_000 });
  pool.on('error', () => undefined); // idle clients lose their server during the test
  await migrate(pool);
});
afterAll(async () => {
  await pool?.end();
  await postgres?.stop();
});

describe('Postgres unreachable before the call', () => {
  it('never runs the activity body, fails retryably, then completes once when Postgres is back', async () => {
    let bodyRuns = 0;
    const taskQueue = uniqueName('tq');
    const activities = { sendInvoice: async (to: string) => (bodyRuns++, `sent to ${to}`) };
    const interceptors = { activity: idempotencyInterceptors({ store: new PostgresClaimStore({ pool }) }) };

    const result = await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      await postgres.pause();
      const handle = await temporal.client.workflow.start('callActivity', {
        taskQueue,
        workflowId: uniqueName('wf'),
        args: [{ activity: 'sendInvoice', args: ['ap@example.com'], maximumAttempts: 100 }],
      });
      // Two attempts failed: the one the outage hit, and a retry that found it still down.
      const lastFailure = await pendingActivityFailure(handle, (_, attempt) => attempt >= 3);
      expect(lastFailure.type).toBe(IdempotencyStoreUnavailable);
      expect(lastFailure.nonRetryable).toBeFalsy();
      expect(bodyRuns).toBe(0);
      await postgres.resume();
      return handle.result();
    });

    expect(result).toEqual(['sent to ap@example.com']);
    expect(bodyRuns).toBe(1);
    const { rows } = await pool.query(`SELECT state, attempt FROM temporal_idempotency.claims`);
    expect(rows).toHaveLength(1);
    expect(rows[0].state).toBe('completed');
    expect(rows[0].attempt).toBeGreaterThanOrEqual(2);
  });
});
