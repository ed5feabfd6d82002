/**
 * Every statement that settles a claim writes a record that a worker holding the record secret
 * verifies on read, with each value in its own column: the settling statements' parameters were
 * renumbered when the NOTIFY channel ($3) went, and a parameter one place off would store a MAC as
 * a result, a note as a secret id, or sign fields the row does not hold. Alone and in a batch of
 * records, marked unknown, taken over, handed back, released; and a workflow refused on the key is
 * still found for its settler to tell.
 */
import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { PostgresClaimStore } from '../../src/index.js';
import type { Claim } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { claimRequest } from '../support/claims.js';

const schema = useTestSchema(import.meta.filename);
const LEASE_MS = 30_000;
const SECRET = randomBytes(32).toString('base64');

const pools: pg.Pool[] = [];
afterAll(async () => void (await Promise.all(pools.map((pool) => pool.end()))));

/** A store signing with SECRET, on a pool that notes the name of each prepared statement it runs. */
function signingStore(): { store: PostgresClaimStore; statements: string[] } {
  const pool = new pg.Pool({ connectionString: inject('databaseUrl'), max: 10 });
  pools.push(pool);
  const statements: string[] = [];
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    const name = (args[0] as { name?: string } | string)?.constructor === Object ? (args[0] as { name?: string }).name : undefined;
    if (name) statements.push(name.replace(/^ti_[0-9a-f]+_/, ''));
    return query(...args);
  };
  return { store: new PostgresClaimStore({ pool, schema: schema.name, secret: SECRET }), statements };
}

const payload = (value: unknown) => defaultPayloadConverter.toPayload(value);
const valueOf = (claim: Claim | null) => (claim?.result ? defaultPayloadConverter.fromPayload(claim.result) : undefined);

interface RawRow {
  state: string;
  token: string;
  result_payload: unknown;
  outcome_note: string | null;
  outcome_detail: unknown;
  record_mac: string | null;
  secret_id: string | null;
}

async function rawRow(key: string): Promise<RawRow | undefined> {
  const { rows } = await schema.pool.query<RawRow>(
    `SELECT state, token::text, result_payload, outcome_note, outcome_detail, record_mac, secret_id FROM "${schema.name}".claims WHERE key = $1`,
    [key],
  );
  return rows[0];
}

/** The row holds a MAC where the MAC goes and the signing secret's id where the id goes. */
function expectSignedColumns(row: RawRow | undefined, secretId: string): void {
  expect(row?.record_mac).toMatch(/^[0-9a-f]{64}$/);
  expect(row?.secret_id).toBe(secretId);
}

describe('each settled record verifies, its values in their own columns', () => {
  it('a result recorded alone', async () => {
    const { store, statements } = signingStore();
    const { claim } = await store.begin(claimRequest(), LEASE_MS);
    expect(await store.complete(claim, payload({ chargeId: 'ch_1' }))).toBe(true);
    expect(statements).toContain('complete');
    const read = await store.get(claim.key);
    expect(read).toMatchObject({ state: 'completed', authenticity: 'verified' });
    expect(valueOf(read)).toEqual({ chargeId: 'ch_1' });
    const row = await rawRow(claim.key);
    expectSignedColumns(row, read!.signedBy!);
    expect(row?.result_payload).toMatchObject({ metadata: expect.any(Object), data: expect.any(String) });
  });

  it('results recorded together in one statement (a batch)', async () => {
    const { store, statements } = signingStore();
    const claims = await Promise.all(Array.from({ length: 24 }, () => store.begin(claimRequest(), LEASE_MS).then((begun) => begun.claim)));
    const recorded = await Promise.all(claims.map((claim, index) => store.complete(claim, payload({ chargeId: `ch_${index}` }))));
    expect(recorded.every(Boolean)).toBe(true);
    expect(statements, 'no batch was sent: the test proves nothing about completeBatch').toContain('complete_batch');
    for (const [index, claim] of claims.entries()) {
      const read = await store.get(claim.key);
      expect(read, claim.key).toMatchObject({ state: 'completed', authenticity: 'verified' });
      expect(valueOf(read)).toEqual({ chargeId: `ch_${index}` });
      expectSignedColumns(await rawRow(claim.key), read!.signedBy!);
    }
  });

  it('an outcome marked unknown, with its note and the note\'s detail', async () => {
    const { store } = signingStore();
    const { claim } = await store.begin(claimRequest(), LEASE_MS);
    expect(await store.markUnknown(claim, { summary: 'the line dropped', detail: payload({ note: 'after dialling' }) })).toBe(true);
    const read = await store.get(claim.key);
    expect(read).toMatchObject({ state: 'unknown', outcomeNote: 'the line dropped', authenticity: 'verified' });
    expect(defaultPayloadConverter.fromPayload(read!.outcomeDetail!)).toEqual({ note: 'after dialling' });
    const row = await rawRow(claim.key);
    expectSignedColumns(row, read!.signedBy!);
    expect(row?.outcome_note).toBe('the line dropped');
    expect(row?.result_payload).toBeNull();
  });

  it('a claim taken over from an orphan, then handed back to the orphan\'s call, and then recorded by a later taker', async () => {
    const { store } = signingStore();
    const request = claimRequest();
    const { claim: orphanClaim } = await store.begin(request, LEASE_MS);
    await store.markUnknown(orphanClaim, { summary: 'ambiguous', detail: null });
    const orphan = (await store.get(request.key))!;
    const taken = await store.takeOver(orphan, { ...request, attempt: 2, claimedBy: 'taker/2' }, LEASE_MS, { summary: 'asking the vendor', detail: payload({ asking: 1 }) });
    expect(taken).toMatchObject({ state: 'claimed', attempt: 2, authenticity: 'verified' });
    expect(await store.get(request.key)).toMatchObject({ state: 'claimed', attempt: 2, outcomeNote: 'asking the vendor', authenticity: 'verified' });

    expect(await store.handBack(taken!, orphan, { summary: 'the vendor could not tell', detail: payload({ rounds: 1 }) })).toBe(true);
    const handedBack = await store.get(request.key);
    expect(handedBack).toMatchObject({
      state: 'unknown',
      token: orphan.token,
      attempt: 1,
      claimedBy: orphan.claimedBy,
      workflowId: orphan.workflowId,
      outcomeNote: 'the vendor could not tell',
      authenticity: 'verified',
    });
    expect(defaultPayloadConverter.fromPayload(handedBack!.outcomeDetail!)).toEqual({ rounds: 1 });
    const row = await rawRow(request.key);
    expectSignedColumns(row, handedBack!.signedBy!);
    expect(row?.outcome_note).toBe('the vendor could not tell');

    const again = await store.takeOver(handedBack!, { ...request, attempt: 3, claimedBy: 'taker/3' }, LEASE_MS);
    expect(await store.complete(again!, payload('found'))).toBe(true);
    const recorded = await store.get(request.key);
    expect(recorded).toMatchObject({ state: 'completed', attempt: 3, authenticity: 'verified' });
    expect(valueOf(recorded)).toBe('found');
  });

  it('a release deletes the caller\'s claim, and only the caller\'s', async () => {
    const { store } = signingStore();
    const { claim } = await store.begin(claimRequest(), LEASE_MS);
    expect(await store.release({ ...claim, token: '00000000-0000-4000-8000-000000000000' })).toBe(false);
    expect(await store.get(claim.key)).toMatchObject({ state: 'claimed', authenticity: 'verified' });
    expect(await store.release(claim)).toBe(true);
    expect(await store.get(claim.key)).toBeNull();
  });
});

describe('a workflow refused on the key is found for the settler to tell', () => {
  for (const how of ['complete', 'complete in a batch', 'release'] as const) {
    it(`after ${how}`, async () => {
      const { store } = signingStore();
      const claims = await Promise.all(
        Array.from({ length: how === 'complete in a batch' ? 16 : 1 }, () => store.begin(claimRequest(), LEASE_MS).then((begun) => begun.claim)),
      );
      const refused = claims[0]!;
      const waiter = { key: refused.key, namespace: 'default', workflowId: 'wf-refused', runId: 'run-9', activityType: 'chargeCard' };
      expect(await store.addWaiter(waiter)).toEqual({ claimState: 'claimed' });
      const settled = await Promise.all(claims.map((claim) => (how === 'release' ? store.release(claim) : store.complete(claim, payload('done')))));
      expect(settled.every(Boolean)).toBe(true);
      expect(await store.waitersToTell(refused)).toEqual([waiter]);
      // Only the claim someone was refused on is looked up.
      for (const other of claims.slice(1)) expect(await store.waitersToTell(other)).toEqual([]);
    });
  }
});
