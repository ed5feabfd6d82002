/**
 * A ledger start entry that waits on a lock is waited for, not given up: found in review of 91c7d93
 * (the audit ledger's appends waited 10 s at most for their answer): a start
 * entry given up client-side is not undone on the server. Its backend, waiting on a lock (here a
 * table lock, as a migration's ALTER TABLE queued behind a long transaction takes; a synchronous
 * standby that is slow to acknowledge holds a commit the same way), goes on and commits after the
 * client stopped listening. The interceptor, told the append failed, does not make the call (NotSentError)
 * and releases the claim, so the ledger ends up with a `started` row for a call that never went out:
 * "a ledger that records a call that never happened is worse than none" (DESIGN, The audit ledger).
 * Before 91c7d93 the append waited for the lock and the call was made, as its entry says.
 *
 * Real Postgres, the real interceptors (IdempotentActivityEnvironment, audit: true).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { PostgresClaimStore } from '../../src/index.js';
import type { StoreLogger } from '../../src/index.js';
import { IdempotentActivityEnvironment } from '../../src/testing/index.js';
import { useTestSchema } from '../support/schema.js';

const schema = useTestSchema(import.meta.filename);
const quiet: StoreLogger = { warn: () => undefined, error: () => undefined };

describe('a ledger start entry answered after the statement timeout', () => {
  it('is not left in the ledger for a call that was not made', { timeout: 90_000 }, async () => {
    const workflowId = `wf-ledger-late-${Date.now()}`;
    const store = new PostgresClaimStore({ pool: schema.pool, schema: schema.name, logger: quiet });
    await store.keySalt();
    const environment = new IdempotentActivityEnvironment({
      store,
      audit: true,
      info: { workflowExecution: { workflowId, runId: 'run-1' }, startToCloseTimeoutMs: 120_000 },
    });
    let calls = 0;
    const chargeCard = async (_amount: number) => (calls++, 'charged');

    // Inserts into the ledger wait for this lock (ROW EXCLUSIVE conflicts with SHARE ROW EXCLUSIVE); reads and the claims do not.
    const locker = await schema.pool.connect();
    await locker.query('BEGIN');
    await locker.query(`LOCK TABLE "${schema.name}".ledger IN SHARE ROW EXCLUSIVE MODE`);
    const attempt = environment
      .attempt({ activityType: 'chargeCard', attempt: 1 })
      .run(chargeCard, 500)
      .then(
        () => 'called',
        (error: Error) => error.name,
      );
    const ended = await Promise.race([attempt, sleep(12_000).then(() => 'waiting' as const)]);
    await locker.query('COMMIT'); // the lock goes: the start entry the worker gave up on goes in now
    locker.release();
    const outcome = await attempt;
    await sleep(1_000);

    const { rows } = await schema.pool.query<{ event: string; attempt: number }>(
      `SELECT event, attempt FROM "${schema.name}".ledger WHERE workflow_id = $1 ORDER BY id`,
      [workflowId],
    );
    const started = rows.filter((row) => row.event === 'started');
    expect(
      { calls, startedEntries: started.length },
      `the attempt ended ${String(ended)} -> ${outcome}; the ledger says ${started.length} call(s) went out, the vendor saw ${calls}`,
    ).toEqual({ calls: started.length, startedEntries: started.length });
  });
});
