/**
 * A claim answered later than its lease could have lapsed is not acted on: it goes back unsent, and the
 * attempt fails retryably (IdempotencyStoreUnavailable).
 *
 * Found in review: a claim whose answer was lost is tried again under the same token, and one of those
 * tries can be held up far past the lease (a connect or a statement into a partition). Meanwhile the row
 * the first try left lapses, is refused as an orphan, and an operator who checked the vendor (nothing was
 * called) releases it; the refused workflow goes on under another key (a call-scoped key is new on each
 * pass of `resumable()`) and calls. When the held try lands, the released key is free, so it inserts a
 * fresh claim under the old token and wins: without this guard the stale attempt called too. (Through
 * Temporal, the SDK's cancellation at start-to-close usually comes first; this guard does not depend on it.)
 *
 * Real Postgres, the real interceptor (IdempotentActivityEnvironment, never cancelled here).
 */
import { afterAll, describe, expect, inject, it } from 'vitest';
import pg from 'pg';
import { ClaimOperations, IdempotencyStoreUnavailable, PostgresClaimStore } from '../../src/index.js';
import { IdempotentActivityEnvironment } from '../../src/testing/index.js';
import { claimRequest } from '../support/claims.js';
import { useTestSchema } from '../support/schema.js';

const schema = useTestSchema(import.meta.filename);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A real pool. `loseNextClaimThenHang()`: the next claim INSERT commits and its answer is lost; the
 * statement after it hangs (a connect into a partition) until `heal()`, then goes through. `hanging`
 * resolves once it hangs.
 */
function partitionedPool() {
  const real = new pg.Pool({ connectionString: inject('databaseUrl') });
  real.on('error', () => undefined);
  let armed = false;
  let hangNext = false;
  let heal!: () => void;
  const healed = new Promise<void>((resolve) => (heal = resolve));
  let hung!: () => void;
  const hanging = new Promise<void>((resolve) => (hung = resolve));
  const query = async (config: unknown, values?: unknown) => {
    if (hangNext) {
      hangNext = false;
      hung();
      await healed;
    }
    const name = (config as { name?: string }).name ?? '';
    const result = await (real.query as (c: unknown, v?: unknown) => Promise<unknown>)(config, values);
    if (armed && name.endsWith('_claim')) {
      armed = false;
      hangNext = true;
      throw new Error('Connection terminated unexpectedly');
    }
    return result;
  };
  const pool = new Proxy(real, { get: (target, prop, receiver) => (prop === 'query' ? query : Reflect.get(target, prop, receiver)) });
  return { pool, loseNextClaimThenHang: () => void (armed = true), hanging, heal: () => heal(), end: () => real.end() };
}

const claimsNow = async () =>
  (await schema.pool.query<{ key: string; token: string; state: string }>(`SELECT key, token, state FROM "${schema.name}".claims`)).rows;

describe('a claim answered after its lease could have lapsed', () => {
  const ends: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const end of ends) await end();
  });

  it('goes back unsent: the attempt fails retryably, and the key an operator released stays free', async () => {
    const { pool, loseNextClaimThenHang, hanging, heal, end } = partitionedPool();
    ends.push(end);
    const leaseMs = 1_000;
    const environment = new IdempotentActivityEnvironment({
      store: new PostgresClaimStore({ pool, schema: schema.name }),
      leaseMs,
      info: { workflowExecution: { workflowId: `wf-${Date.now()}`, runId: 'run-1' } },
    });
    const other = new PostgresClaimStore({ pool: schema.pool, schema: schema.name });
    const operations = new ClaimOperations(schema.pool, { schema: schema.name });
    let calls = 0;
    const chargeCard = async (amountCents: number) => ({ id: `ch_${++calls}`, amountCents });

    loseNextClaimThenHang();
    const attempt = environment.run(chargeCard, 500).then(
      (result) => ({ result }),
      (error: unknown) => ({ failure: error as { type?: string; nonRetryable?: boolean } }),
    );
    await hanging; // a try under the same token is in flight
    await sleep(leaseMs + 300);

    // The row the first try left has lapsed: refused as an orphan, the vendor checked (nothing), released.
    const [orphan] = await claimsNow();
    expect(orphan?.state).toBe('claimed');
    await operations.release(orphan!.key, { force: true, reason: 'vendor shows no charge' });
    // The refused workflow goes on under another key and calls.
    const resumed = await other.begin({ ...claimRequest(), refusedKey: orphan!.key }, 60_000);
    expect(resumed.won).toBe(true);
    calls++;

    heal(); // the held try lands: the released key is free, and the old token inserts it afresh
    const outcome = await attempt;
    expect(outcome).toMatchObject({ failure: { type: IdempotencyStoreUnavailable, nonRetryable: false } });
    expect(calls, 'the vendor was called by the resumed call only').toBe(1);
    expect((await claimsNow()).filter((claim) => claim.key === orphan!.key)).toEqual([]);
  });
});
