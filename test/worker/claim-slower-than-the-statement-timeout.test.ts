/**
 * A claim INSERT that waits on a lock longer than the store's bound for other statements is waited for,
 * not given up: found in review of 91c7d93 (every claim statement waited 10 s at most, then was tried again): a claim
 * INSERT given up client-side is not undone on the server. Its backend, waiting on a lock (here a table
 * lock, as a migration's ALTER TABLE queued behind a long transaction takes; a synchronous standby slow
 * to acknowledge holds the durable commit the same way) goes on and commits after the client stopped
 * listening, once the begin has given up (IdempotencyStoreUnavailable, "nothing ran"). Nobody holds
 * that claim: its lease lapses, and the next attempt is refused as an orphan, non-retryably, for a
 * call that was never made; the workflow waits for a person who finds the vendor never called.
 * Before 91c7d93 the INSERT waited for the lock; answered after the lease, 1894cb6 gave it back unsent
 * and the retry ran. DESIGN: "store unreachable before the call | nothing ran | retryable".
 *
 * Real Postgres, the real interceptor (IdempotentActivityEnvironment).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { PostgresClaimStore } from '../../src/index.js';
import type { StoreLogger } from '../../src/index.js';
import { IdempotentActivityEnvironment } from '../../src/testing/index.js';
import { STATEMENT_TIMEOUT_MS } from '../../src/store/postgres/context.js';
import { useTestSchema } from '../support/schema.js';

const schema = useTestSchema(import.meta.filename);
const quiet: StoreLogger = { warn: () => undefined, error: () => undefined };

describe('a claim whose INSERT waits longer than the statement timeout', () => {
  it('leaves no orphan behind: the next attempt runs the call that was never made', { timeout: 90_000 }, async () => {
    const workflowId = `wf-claim-late-${Date.now()}`;
    const store = new PostgresClaimStore({ pool: schema.pool, schema: schema.name, logger: quiet });
    await store.keySalt();
    const environment = new IdempotentActivityEnvironment({
      store,
      leaseMs: 2_000,
      info: { workflowExecution: { workflowId, runId: 'run-1' }, startToCloseTimeoutMs: 120_000 },
    });
    let calls = 0;
    const chargeCard = async (_amount: number) => (calls++, 'charged');
    const run = (attempt: number) =>
      environment
        .attempt({ activityType: 'chargeCard', attempt })
        .run(chargeCard, 500)
        .then(
          (value) => ({ value }),
          (error: { type?: string; nonRetryable?: boolean }) => ({ type: error.type, nonRetryable: error.nonRetryable }),
        );

    // Inserts into the claims wait for this lock (ROW EXCLUSIVE conflicts with SHARE); reads do not.
    const locker = await schema.pool.connect();
    await locker.query('BEGIN');
    await locker.query(`LOCK TABLE "${schema.name}".claims IN SHARE MODE`);
    // Held past the store's 10 s bound for the statements that may be given up (STATEMENT_TIMEOUT_MS).
    const unlocked = sleep(STATEMENT_TIMEOUT_MS + 1_000).then(async () => {
      await locker.query('COMMIT'); // the lock goes: the waiting INSERT commits now
      locker.release();
    });
    const first = await run(1);
    await unlocked;
    // Answered after its lease: given back unsent, and the attempt fails retryably (nothing ran).
    expect(first, 'the first attempt fails retryably: nothing ran').toMatchObject({ nonRetryable: false });
    expect(calls).toBe(0);

    const second = await run(2);
    const { rows } = await schema.pool.query<{ state: string }>(`SELECT state FROM "${schema.name}".claims WHERE workflow_id = $1`, [workflowId]);
    expect(
      { second, calls },
      `the vendor was never called, yet the retry got ${JSON.stringify(second)}; claims now: ${JSON.stringify(rows)}`,
    ).toEqual({ second: { value: 'charged' }, calls: 1 });
  });
});
