/**
 * What every ClaimStore must do, as the interceptor relies on it: one suite,
 * run against PostgresClaimStore (real Postgres) and the in-memory store of
 * `temporal-idempotency/testing`, so the two cannot drift. A store's own
 * mechanics (migrations, its clock) are tested beside it, not here.
 */
import { randomUUID } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import type { Payload } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import type { Claim, ClaimStore, Waiter } from '../../src/index.js';
import { claimRequest as request } from '../support/claims.js';

/** A store under test, and what the suite needs to look at it from outside. */
export interface StoreUnderTest {
  readonly store: ClaimStore & { get(key: string): Promise<Claim | null> };
  /** `count` stores on the same claims, as that many worker processes would hold them. */
  connections(count: number): Promise<{ readonly stores: readonly ClaimStore[]; close(): Promise<void> }>;
  /** Lets `ms` pass on the store's clock (Postgres: real time). */
  elapse(ms: number): Promise<void>;
  /** The store's clock now. */
  now(): Promise<Date>;
  /** The workflows on record as refused on `key`. */
  waitersOf(key: string): Promise<Waiter[]>;
  /** The arguments kept with the claim on `key`. */
  recordedArguments(key: string): Promise<Payload | null>;
}

const LEASE_MS = 30_000;
/** Short enough that Postgres tests wait little for a lease to lapse, long enough to read the claim first. */
const SHORT_LEASE_MS = 300;
const payload = (value: unknown) => defaultPayloadConverter.toPayload(value);
const valueOf = (claim: Claim | null) => (claim?.result ? defaultPayloadConverter.fromPayload(claim.result) : undefined);

export function describeClaimStoreContract(name: string, subject: () => StoreUnderTest): void {
  const store = () => subject().store;

  describe(`${name} keeps the ClaimStore contract: claims`, () => {
    it('lets exactly one of 50 concurrent begins on one key win, and every loser sees the winner\'s claim', async () => {
      const claim = request();
      const { stores, close } = await subject().connections(50);
      try {
        const results = await Promise.all(stores.map((racer, i) => racer.begin({ ...claim, claimedBy: `racer-${i}` }, LEASE_MS)));
        const winners = results.filter((result) => result.won);
        expect(winners).toHaveLength(1);
        for (const result of results) expect(result.claim.token).toBe(winners[0]!.claim.token);
        expect((await store().get(claim.key))?.claimedBy).toBe(winners[0]!.claim.claimedBy);
      } finally {
        await close();
      }
    });

    it('keeps who claimed the key and for which action, as the request said', async () => {
      const claim = request({ attempt: 3, claimedBy: 'host-3/4711', runId: 'run-9', activityId: '12' });
      const { won, claim: held } = await store().begin(claim, LEASE_MS);
      expect(won).toBe(true);
      const expected = {
        key: claim.key,
        state: 'claimed',
        fingerprint: claim.fingerprint,
        namespace: claim.namespace,
        activityType: claim.activityType,
        workflowId: claim.workflowId,
        runId: 'run-9',
        activityId: '12',
        attempt: 3,
        claimedBy: 'host-3/4711',
        finishedAt: null,
        result: null,
        outcomeNote: null,
        outcomeDetail: null,
        ownerAlive: true,
        authenticity: 'not-checked',
        signedBy: null,
      };
      expect(held).toMatchObject(expected);
      expect(await store().get(claim.key)).toMatchObject({ ...expected, token: held.token });
    });

    it('stamps claims, leases and deadlines with the store\'s clock', async () => {
      const before = await subject().now();
      const { claim } = await store().begin(request({ deadlineMs: 90_000 }), LEASE_MS);
      const after = await subject().now();
      expect(claim.claimedAt.getTime()).toBeGreaterThanOrEqual(before.getTime());
      expect(claim.claimedAt.getTime()).toBeLessThanOrEqual(after.getTime());
      expect(claim.leaseExpiresAt!.getTime() - claim.claimedAt.getTime()).toBeCloseTo(LEASE_MS, -1);
      expect(claim.deadlineAt!.getTime() - claim.claimedAt.getTime()).toBeCloseTo(90_000, -1);
      const { claim: unbounded } = await store().begin(request({ deadlineMs: null }), LEASE_MS);
      expect(unbounded.deadlineAt).toBeNull();
    });

    it("finds a claim under the refused key it resumes first, and claims nothing under its own", async () => {
      const refused = request();
      const { claim: held } = await store().begin(refused, LEASE_MS);
      const resumed = request({ refusedKey: refused.key });
      const found = await store().begin(resumed, LEASE_MS);
      expect(found.won).toBe(false);
      expect(found.claim).toMatchObject({ key: refused.key, token: held.token });
      expect(await store().get(resumed.key)).toBeNull();
      // The refused key released (by an operator): the call is claimed under its own key.
      const absent = request({ refusedKey: `${refused.key}-released` });
      expect((await store().begin(absent, LEASE_MS)).won).toBe(true);
    });

    it('gives one key salt, the same on every call', async () => {
      const salt = await store().keySalt();
      expect(salt.hex).toMatch(/^[0-9a-f]{32,}$/);
      expect((await store().keySalt()).hex).toBe(salt.hex);
    });

    it('keeps the arguments the call was sent with, and none when it was given none', async () => {
      const sent = payload('{"orderId":"o-1"}');
      const withArguments = request({ arguments: sent });
      await store().begin(withArguments, LEASE_MS);
      expect(await subject().recordedArguments(withArguments.key)).toEqual({ metadata: sent.metadata, data: sent.data });
      const without = request();
      await store().begin(without, LEASE_MS);
      expect(await subject().recordedArguments(without.key)).toBeNull();
    });
  });

  describe(`${name} keeps the ClaimStore contract: outcomes`, () => {
    it('records a result only for the token that holds the claim, and returns it as given', async () => {
      const claim = request();
      const { claim: held } = await store().begin(claim, LEASE_MS);
      const result = payload({ chargeId: 'ch_1', bytes: [0, 255] });
      expect(await store().complete({ ...held, token: randomUUID() }, result)).toBe(false);
      expect((await store().get(claim.key))?.state).toBe('claimed');
      expect(await store().complete(held, result)).toBe(true);
      const completed = await store().get(claim.key);
      expect(completed?.state).toBe('completed');
      expect(completed?.result).toEqual({ metadata: result.metadata, data: result.data });
      expect(valueOf(completed)).toEqual({ chargeId: 'ch_1', bytes: [0, 255] });
      expect(completed?.finishedAt).toBeInstanceOf(Date);
    });

    it('never releases a claim it does not hold, nor a completed one', async () => {
      const claim = request();
      const { claim: held } = await store().begin(claim, LEASE_MS);
      expect(await store().release({ ...held, token: randomUUID() })).toBe(false);
      expect(await store().get(claim.key)).not.toBeNull();
      await store().complete(held, payload(1));
      expect(await store().release(held)).toBe(false);
      expect((await store().get(claim.key))?.state).toBe('completed');
    });

    it('frees the key on release, so the next begin wins with a new token', async () => {
      const claim = request();
      const first = await store().begin(claim, LEASE_MS);
      expect(await store().release(first.claim)).toBe(true);
      expect(await store().get(claim.key)).toBeNull();
      const second = await store().begin({ ...claim, attempt: 2 }, LEASE_MS);
      expect(second.won).toBe(true);
      expect(second.claim.token).not.toBe(first.claim.token);
      expect(second.claim.attempt).toBe(2);
    });

    it('keeps a claim marked unknown, with its note, and later begins find it', async () => {
      const claim = request();
      const { claim: held } = await store().begin(claim, LEASE_MS);
      expect(await store().markUnknown({ ...held, token: randomUUID() }, { summary: 'not mine', detail: null })).toBe(false);
      const detail = payload({ note: 'socket hang up after the request was sent' });
      expect(await store().markUnknown(held, { summary: 'timeout after send', detail })).toBe(true);
      const later = await store().begin({ ...claim, attempt: 2 }, LEASE_MS);
      expect(later.won).toBe(false);
      expect(later.claim).toMatchObject({ state: 'unknown', outcomeNote: 'timeout after send', attempt: 1, result: null });
      expect(later.claim.outcomeDetail).toEqual({ metadata: detail.metadata, data: detail.data });
      expect(later.claim.finishedAt).toBeInstanceOf(Date);
    });

    it('settles a claim once: after its outcome, neither complete, markUnknown nor release changes it', async () => {
      const claim = request();
      const { claim: held } = await store().begin(claim, LEASE_MS);
      expect(await store().markUnknown(held, { summary: 'first outcome', detail: null })).toBe(true);
      expect(await store().complete(held, payload('late'))).toBe(false);
      expect(await store().markUnknown(held, { summary: 'second outcome', detail: null })).toBe(false);
      expect(await store().release(held)).toBe(false);
      expect(await store().get(claim.key)).toMatchObject({ state: 'unknown', outcomeNote: 'first outcome', result: null });
    });
  });

  describe(`${name} keeps the ClaimStore contract: takeover of an orphaned claim`, () => {
    it('gives the claim the taker\'s identity and deadline, never a mix of two attempts', async () => {
      const orphanRequest = request({ workflowId: 'wf-orphan', runId: 'run-orphan', activityId: '7' });
      const { claim: orphan } = await store().begin(orphanRequest, LEASE_MS);
      await store().markUnknown(orphan, { summary: 'timeout after send', detail: null });
      const taker = { ...orphanRequest, workflowId: 'wf-taker', runId: 'run-taker', activityId: '3', attempt: 2, claimedBy: 'taker/2', deadlineMs: 90_000 };
      const taken = await store().takeOver({ ...orphan, state: 'unknown' }, taker, LEASE_MS);
      expect(taken).toMatchObject({
        state: 'claimed',
        workflowId: 'wf-taker',
        runId: 'run-taker',
        activityId: '3',
        attempt: 2,
        claimedBy: 'taker/2',
        ownerAlive: true,
        outcomeNote: null,
        finishedAt: null,
      });
      expect(taken!.token).not.toBe(orphan.token);
      expect(taken!.deadlineAt!.getTime() - taken!.claimedAt.getTime()).toBeCloseTo(90_000, -2);
      expect(await store().get(orphan.key)).toMatchObject({ workflowId: 'wf-taker', runId: 'run-taker', activityId: '3', token: taken!.token });
      // The orphan's token settles nothing any more; the taker's does.
      expect(await store().complete(orphan, payload('old'))).toBe(false);
      expect(await store().complete(taken!, payload('new'))).toBe(true);
    });

    it('takes over only an orphan: never a live owner\'s claim, a completed one, or one whose token moved on', async () => {
      const live = request();
      const { claim: alive } = await store().begin(live, LEASE_MS);
      expect(await store().takeOver(alive, { ...live, attempt: 2 }, LEASE_MS)).toBeNull();
      expect((await store().get(live.key))?.token).toBe(alive.token);

      const done = request();
      const { claim: completed } = await store().begin(done, LEASE_MS);
      await store().complete(completed, payload('done'));
      expect(await store().takeOver(completed, { ...done, attempt: 2 }, LEASE_MS)).toBeNull();
      expect((await store().get(done.key))?.state).toBe('completed');

      const lost = request();
      const { claim: orphan } = await store().begin(lost, LEASE_MS);
      await store().markUnknown(orphan, { summary: 'ambiguous', detail: null });
      const first = await store().takeOver(orphan, { ...lost, attempt: 2, claimedBy: 'first' }, LEASE_MS);
      const second = await store().takeOver(orphan, { ...lost, attempt: 2, claimedBy: 'second' }, LEASE_MS);
      expect(first?.claimedBy).toBe('first');
      expect(second).toBeNull();
    });

    it('gives a taken-over claim back as the orphan it was, unknown with a note: only its taker can, and only while it holds it', async () => {
      const claim = request({ attempt: 1, claimedBy: 'owner/1', runId: 'run-1', activityId: '7' });
      const { claim: orphan } = await store().begin(claim, LEASE_MS);
      await store().markUnknown(orphan, { summary: 'the line dropped', detail: null });
      const unknown = (await store().get(claim.key))!;
      const taken = (await store().takeOver(unknown, { ...claim, attempt: 2, claimedBy: 'taker/2', runId: 'run-2', activityId: '8' }, LEASE_MS))!;
      const note = { summary: 'reconcile cut short about the call of attempt 1', detail: payload({ note: 'slow lookup' }) };
      expect(await store().handBack!({ ...taken, token: randomUUID() }, unknown, note)).toBe(false);
      expect(await store().handBack!(taken, unknown, note)).toBe(true);
      expect(await store().get(claim.key)).toMatchObject({
        state: 'unknown',
        token: unknown.token,
        attempt: 1,
        claimedBy: 'owner/1',
        claimedAt: unknown.claimedAt,
        runId: 'run-1',
        activityId: '7',
        outcomeNote: 'reconcile cut short about the call of attempt 1',
      });
      expect(await store().handBack!(taken, unknown, note)).toBe(false); // no longer the taker's
    });

    it('takes over a claim once its owner\'s lease lapsed', async () => {
      const claim = request();
      const { claim: held } = await store().begin(claim, SHORT_LEASE_MS);
      await subject().elapse(SHORT_LEASE_MS * 2);
      const found = await store().get(claim.key);
      expect(found?.ownerAlive).toBe(false);
      const taken = await store().takeOver(found!, { ...claim, attempt: 2, claimedBy: 'taker' }, LEASE_MS);
      expect(taken).toMatchObject({ state: 'claimed', claimedBy: 'taker', ownerAlive: true });
      expect(await store().release(held)).toBe(false);
    });
  });

  describe(`${name} keeps the ClaimStore contract: leases`, () => {
    it('judges an owner dead once its lease lapses, by the store\'s clock', async () => {
      const claim = request();
      const { claim: held } = await store().begin(claim, SHORT_LEASE_MS);
      expect(held.ownerAlive).toBe(true);
      expect((await store().get(claim.key))?.ownerAlive).toBe(true);
      await subject().elapse(SHORT_LEASE_MS * 2);
      const lapsed = await store().get(claim.key);
      expect(lapsed?.ownerAlive).toBe(false);
      expect(lapsed!.leaseExpiresAt!.getTime()).toBeLessThan(lapsed!.readAt.getTime());
    });

    it('renews every held lease at once, and only claims still held with their token', async () => {
      expect(await store().renewLeases([], LEASE_MS)).toEqual([]);
      const claims = await Promise.all(Array.from({ length: 5 }, () => store().begin(request(), SHORT_LEASE_MS)));
      const [released, completed, ...held] = claims.map((result) => result.claim);
      await store().release(released!);
      await store().complete(completed!, payload('done'));
      const renewed = await store().renewLeases([...held, released!, completed!, { ...held[0]!, token: randomUUID() }], 60_000);
      expect([...renewed].sort()).toEqual(held.map((claim) => claim.token).sort());
      await subject().elapse(SHORT_LEASE_MS * 2);
      for (const claim of held) expect((await store().get(claim.key))?.ownerAlive).toBe(true);
    });
  });

  describe(`${name} keeps the ClaimStore contract: refused workflows`, () => {
    it('notes each workflow refused on a key once, with its latest run', async () => {
      const claim = request();
      const { key } = claim;
      await store().begin(claim, LEASE_MS);
      const waiter = (workflowId: string, runId: string): Waiter => ({ key, namespace: 'default', workflowId, runId, activityType: 'chargeCard' });
      await store().addWaiter(waiter('wf-a', 'run-1'));
      await store().addWaiter(waiter('wf-b', 'run-1'));
      await store().addWaiter(waiter('wf-a', 'run-2'));
      await store().begin({ ...claim, key: `${key}-other` }, LEASE_MS);
      await store().addWaiter({ ...waiter('wf-a', 'run-1'), key: `${key}-other` });
      const waiters = (await subject().waitersOf(key)).sort((a, b) => a.workflowId.localeCompare(b.workflowId));
      expect(waiters).toEqual([waiter('wf-a', 'run-2'), waiter('wf-b', 'run-1')]);
    });

    it('answers the claim\'s state as it was once the waiter was noted: completed means the refused call has an answer', async () => {
      const claim = request();
      const waiter = (workflowId: string): Waiter => ({ key: claim.key, namespace: 'default', workflowId, runId: 'run-1', activityType: 'chargeCard' });
      expect(await store().addWaiter(waiter('wf-none'))).toEqual({ claimState: null });
      const { claim: held } = await store().begin(claim, LEASE_MS);
      expect(await store().addWaiter(waiter('wf-claimed'))).toEqual({ claimState: 'claimed' });
      await store().complete(held, payload({ id: 'ch_1' }));
      expect(await store().addWaiter(waiter('wf-late'))).toEqual({ claimState: 'completed' });
      // Answered, or with a free key, a workflow does not wait: only the one noted while the claim was open is on record.
      expect((await subject().waitersOf(claim.key)).map((noted) => noted.workflowId)).toEqual(['wf-claimed']);
    });

    it('gives the recorder of an outcome the workflows refused on its key, until they are told', async () => {
      const claim = request();
      const { claim: held } = await store().begin(claim, LEASE_MS);
      const waiter = (workflowId: string): Waiter => ({ key: claim.key, namespace: 'default', workflowId, runId: 'run-1', activityType: 'chargeCard' });
      await store().addWaiter(waiter('wf-a'));
      await store().addWaiter(waiter('wf-b'));
      expect(await store().complete(held, payload({ id: 'ch_1' }))).toBe(true);
      expect(await store().waitersToTell(held)).toEqual([waiter('wf-a'), waiter('wf-b')]);
      await store().waitersTold(claim.key, [waiter('wf-a'), waiter('wf-b')]);
      expect(await store().waitersToTell(held)).toEqual([]);
    });

    it('gives the workflows to tell only to whoever settled the claim: not before, and not to a token that settled nothing', async () => {
      const claim = request();
      const { claim: held } = await store().begin(claim, LEASE_MS);
      await store().addWaiter({ key: claim.key, namespace: 'default', workflowId: 'wf-a', runId: 'run-1', activityType: 'chargeCard' });
      expect(await store().waitersToTell(held)).toEqual([]);
      const someoneElse = randomUUID();
      expect(await store().complete({ ...held, token: someoneElse }, payload({ id: 'ch_3' }))).toBe(false);
      expect(await store().waitersToTell({ key: claim.key, token: someoneElse })).toEqual([]);
      expect(await store().complete(held, payload({ id: 'ch_3' }))).toBe(true);
      expect((await store().waitersToTell(held)).map((waiter) => waiter.workflowId)).toEqual(['wf-a']);
    });

    it('gives the recorder of an outcome nobody was refused on no one to tell', async () => {
      const { claim: held } = await store().begin(request(), LEASE_MS);
      expect(await store().complete(held, payload({ id: 'ch_2' }))).toBe(true);
      expect(await store().waitersToTell(held)).toEqual([]);
    });
  });
}
