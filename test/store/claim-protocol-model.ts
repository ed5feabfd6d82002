/**
 * The claim protocol against a reference model: random sequences of what attempts, workers and
 * operators do to a few keys (begin, renew, a lease lapsing as when a worker vanishes, complete,
 * release, mark unknown, take over an orphan and give it back, note and tell waiters, an operator's
 * resolve and release), each checked against a small model of what the store must answer. Run on the
 * in-memory store in the unit tier (many runs) and on Postgres in the integration tier (fewer).
 *
 * What the model holds a store to, per key:
 * - a begin wins only where no claim is, and at most one caller holds the key's token;
 * - only the token that holds a claim without an outcome settles it: a stale token never does;
 * - a completed claim answers with the result recorded for that key, never another key's;
 * - an orphan (outcome unknown, or its owner's lease lapsed) is taken over by one caller at a time,
 *   and never a claim whose owner is alive;
 * - the settler of a claim a workflow was refused on learns to tell it, once per refusal.
 *
 * A failure prints fast-check's seed and path; `MODEL_SEED=<seed>` replays a run.
 */
import type { Payload } from '@temporalio/common';
import { defaultPayloadConverter } from '@temporalio/common';
import fc from 'fast-check';
import { expect } from 'vitest';
import type { Claim, ClaimState, ClaimStore, Waiter } from '../../src/index.js';
import { claimRequest } from '../support/claims.js';

/** The store under test, a fresh set of keys per run, and (where the store has them) an operator's changes. */
export interface ProtocolSubject {
  readonly store: ClaimStore;
  /** Keys no earlier run used. */
  keys(): readonly string[];
  /** Called after every command: lets the store's clock move on (the in-memory store's stands still). */
  tick?(): void;
  readonly operator?: {
    resolve(key: string, result: Payload): Promise<unknown>;
    release(key: string): Promise<unknown>;
  };
}

const LEASE_MS = 60_000;
const KEYS = 3;
const WORKFLOWS = ['wf-a', 'wf-b', 'wf-c'];

interface ModelClaim {
  state: ClaimState;
  token: string;
  leaseAlive: boolean;
  result: unknown;
  /** A workflow was refused on it: its settler learns whom to tell. */
  awaited: boolean;
}

/** A claim a caller holds or held: its token may have gone stale since. */
interface Handle {
  readonly claim: Claim;
  /** For a claim taken over: the orphan it was, to give back. */
  readonly orphan?: Claim;
}

interface Model {
  readonly claims: Map<number, ModelClaim>;
  /** Waiters by key and workflow: whether told since last refused. */
  readonly waiters: Map<number, Map<string, { told: boolean; order: number }>>;
  readonly handles: Handle[];
  refusals: number;
}

interface Real {
  readonly subject: ProtocolSubject;
  readonly keys: readonly string[];
}

type ProtocolCommand = fc.AsyncCommand<Model, Real>;

const payload = (value: unknown) => defaultPayloadConverter.toPayload(value);
const valueOf = (claim: Claim | null) => (claim?.result ? defaultPayloadConverter.fromPayload(claim.result) : undefined);

function settles(model: Model, handle: Handle): ModelClaim | undefined {
  const current = model.claims.get(keyIndexOf(model, handle));
  return current?.token === handle.claim.token && current.state === 'claimed' ? current : undefined;
}

/** Handles remember their key by text; the model keys by index. */
const keyIndexes = new WeakMap<Model, Map<string, number>>();
function keyIndexOf(model: Model, handle: Handle): number {
  return keyIndexes.get(model)!.get(handle.claim.key)!;
}

class Begin implements ProtocolCommand {
  constructor(
    readonly key: number,
    readonly attempt: number,
  ) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    const request = claimRequest({ key: real.keys[this.key]!, attempt: this.attempt, fingerprint: `fp-${this.key}` });
    const begun = await real.subject.store.begin(request, LEASE_MS);
    const expected = model.claims.get(this.key);
    if (expected === undefined) {
      expect(begun.won, 'a begin where no claim is wins').toBe(true);
      model.claims.set(this.key, { state: 'claimed', token: begun.claim.token, leaseAlive: true, result: undefined, awaited: false });
      model.handles.push({ claim: begun.claim });
    } else {
      expect(begun.won, 'a begin where a claim is loses').toBe(false);
      expect({ token: begun.claim.token, state: begun.claim.state }).toEqual({ token: expected.token, state: expected.state });
      if (expected.state === 'completed') expect(valueOf(begun.claim)).toEqual(expected.result);
    }
  }
  toString = () => `begin(key ${this.key}, attempt ${this.attempt})`;
}

/** Complete, release or mark unknown by a handle's token: only the holder of an open claim does. */
class Settle implements ProtocolCommand {
  constructor(
    readonly handle: number,
    readonly how: 'complete' | 'release' | 'markUnknown',
    readonly value: number,
  ) {}
  check = (model: Readonly<Model>) => model.handles.length > 0;
  async run(model: Model, real: Real): Promise<void> {
    const handle = model.handles[this.handle % model.handles.length]!;
    const expected = settles(model, handle);
    const { store } = real.subject;
    const result = { for: handle.claim.key, value: this.value };
    const done =
      this.how === 'complete'
        ? await store.complete(handle.claim, payload(result))
        : this.how === 'release'
          ? await store.release(handle.claim)
          : await store.markUnknown(handle.claim, { summary: 'the call timed out', detail: null });
    expect(done, `${this.how} by ${expected ? 'the holder' : 'a stale token'}`).toBe(expected !== undefined);
    if (!expected) return;
    const key = keyIndexOf(model, handle);
    if (this.how === 'release') model.claims.delete(key);
    else if (this.how === 'complete') Object.assign(expected, { state: 'completed', result });
    else expected.state = 'unknown';
    if (this.how !== 'markUnknown') await tellWaiters(model, real, key, handle, expected.awaited);
  }
  toString = () => `${this.how}(handle ${this.handle})`;
}

/** Renews the leases of some handles: only tokens that hold an open claim are renewed. */
class Renew implements ProtocolCommand {
  constructor(
    readonly handles: readonly number[],
    /** 0: the lease lapses now, as when the worker holding it vanished. */
    readonly leaseMs: number,
  ) {}
  check = (model: Readonly<Model>) => model.handles.length > 0;
  async run(model: Model, real: Real): Promise<void> {
    const chosen = this.handles.map((index) => model.handles[index % model.handles.length]!);
    const renewed = await real.subject.store.renewLeases(
      chosen.map(({ claim }) => ({ key: claim.key, token: claim.token })),
      this.leaseMs,
    );
    const expected = [...new Set(chosen.filter((handle) => settles(model, handle)).map(({ claim }) => claim.token))];
    expect([...renewed].sort()).toEqual(expected.sort());
    for (const handle of chosen) {
      const current = settles(model, handle);
      if (current) current.leaseAlive = this.leaseMs > 0;
    }
  }
  toString = () => `renew(handles ${this.handles.join(',')}, ${this.leaseMs} ms)`;
}

/** Reads a key's claim, then takes it over if it is an orphan; with `stale`, takes over by an old handle's claim instead. */
class TakeOver implements ProtocolCommand {
  constructor(
    readonly key: number,
    readonly attempt: number,
    readonly staleHandle: number | undefined,
    readonly asking: boolean,
  ) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    const { store } = real.subject;
    const staleClaim = this.staleHandle === undefined || model.handles.length === 0 ? undefined : model.handles[this.staleHandle % model.handles.length]!.claim;
    const key = staleClaim ? keyIndexes.get(model)!.get(staleClaim.key)! : this.key;
    const read = staleClaim ?? (await store.get(real.keys[key]!));
    const current = model.claims.get(key);
    if (read === null) {
      expect(current, 'get finds no claim where the model has none').toBeUndefined();
      return;
    }
    const request = claimRequest({ key: read.key, attempt: this.attempt, fingerprint: `fp-${key}` });
    const note = this.asking ? { summary: 'asking the vendor', detail: null } : undefined;
    const taken = await store.takeOver(read, request, LEASE_MS, note);
    const orphaned = current !== undefined && current.token === read.token && (current.state === 'unknown' || (current.state === 'claimed' && !current.leaseAlive));
    expect(taken !== null, orphaned ? 'an orphan is taken over' : 'a live, settled or moved-on claim is not taken over').toBe(orphaned);
    if (!taken || !current) return;
    expect(taken.token).not.toBe(read.token);
    expect({ state: taken.state, attempt: taken.attempt, result: taken.result }).toEqual({ state: 'claimed', attempt: this.attempt, result: null });
    Object.assign(current, { state: 'claimed', token: taken.token, leaseAlive: true, result: undefined });
    model.handles.push({ claim: taken, orphan: read });
  }
  toString = () => `takeOver(key ${this.key}, attempt ${this.attempt}${this.staleHandle === undefined ? '' : `, by handle ${this.staleHandle}`})`;
}

/** Gives a taken-over claim back to the orphan it was: its token again, outcome unknown. */
class HandBack implements ProtocolCommand {
  constructor(readonly handle: number) {}
  check = (model: Readonly<Model>) => model.handles.some((handle) => handle.orphan);
  async run(model: Model, real: Real): Promise<void> {
    const taken = model.handles.filter((handle) => handle.orphan);
    const handle = taken[this.handle % taken.length]!;
    const expected = settles(model, handle);
    const done = await real.subject.store.handBack(handle.claim, handle.orphan!, { summary: 'the question was cut short', detail: null });
    expect(done, expected ? 'the taker gives it back' : 'a stale taker gives nothing back').toBe(expected !== undefined);
    if (expected) Object.assign(expected, { state: 'unknown', token: handle.orphan!.token });
  }
  toString = () => `handBack(taken ${this.handle})`;
}

/** Reads a key: the claim the model says, with the result recorded for that key. */
class Read implements ProtocolCommand {
  constructor(readonly key: number) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    const claim = await real.subject.store.get(real.keys[this.key]!);
    const expected = model.claims.get(this.key);
    if (!expected) return expect(claim).toBeNull();
    expect(claim).not.toBeNull();
    expect({ key: claim!.key, state: claim!.state, token: claim!.token, result: valueOf(claim) }).toEqual({
      key: real.keys[this.key],
      state: expected.state,
      token: expected.token,
      result: expected.result,
    });
    if (expected.state === 'claimed') expect(claim!.ownerAlive, 'the owner is alive exactly while its lease holds').toBe(expected.leaseAlive);
  }
  toString = () => `get(key ${this.key})`;
}

/** A workflow refused on a key is noted, unless the claim is gone or completed. */
class AddWaiter implements ProtocolCommand {
  constructor(
    readonly key: number,
    readonly workflow: number,
  ) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    const workflowId = WORKFLOWS[this.workflow]!;
    const noted = await real.subject.store.addWaiter({ key: real.keys[this.key]!, namespace: 'default', workflowId, runId: 'run-1', activityType: 'chargeCard' });
    const current = model.claims.get(this.key);
    expect(noted.claimState).toBe(current?.state ?? null);
    if (!current) return;
    current.awaited = true;
    if (current.state === 'completed') return;
    const waiters = model.waiters.get(this.key) ?? new Map();
    waiters.set(workflowId, { told: false, order: model.refusals++ });
    model.waiters.set(this.key, waiters);
  }
  toString = () => `addWaiter(key ${this.key}, ${WORKFLOWS[this.workflow]})`;
}

/**
 * The settler of a claim someone was refused on learns whom to tell (those refused since they were last
 * told, first refused first), tells them and notes it; asked again, nobody is left. A claim nobody was
 * refused on has nobody to tell.
 */
async function tellWaiters(model: Model, real: Real, key: number, handle: Handle, awaited: boolean): Promise<void> {
  const { store } = real.subject;
  const held = { key: handle.claim.key, token: handle.claim.token };
  const waiters = model.waiters.get(key) ?? new Map<string, { told: boolean; order: number }>();
  const expected = awaited
    ? [...waiters.entries()]
        .filter(([, waiter]) => !waiter.told)
        .sort(([, a], [, b]) => a.order - b.order)
        .map(([workflowId]) => workflowId)
    : [];
  const toTell = await store.waitersToTell(held);
  expect(toTell.map((waiter: Waiter) => waiter.workflowId), 'the workflows to tell of the outcome').toEqual(expected);
  await store.waitersTold(held.key, toTell);
  for (const workflowId of expected) waiters.get(workflowId)!.told = true;
  expect(await store.waitersToTell(held), 'once told, nobody is left to tell').toEqual([]);
}

/** An operator's change with --force: refused on a completed claim, an error where none is; else it decides. */
class OperatorChange implements ProtocolCommand {
  constructor(
    readonly key: number,
    readonly how: 'resolve' | 'release',
    readonly value: number,
  ) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    const operator = real.subject.operator!;
    const key = real.keys[this.key]!;
    const result = { for: key, value: this.value, by: 'operator' };
    const current = model.claims.get(this.key);
    const change = this.how === 'resolve' ? operator.resolve(key, payload(result)) : operator.release(key);
    if (!current || current.state === 'completed') {
      await expect(change).rejects.toThrow(current ? /already completed/ : /No claim|not found|no claim/i);
      return;
    }
    await change;
    if (this.how === 'release') model.claims.delete(this.key);
    else Object.assign(current, { state: 'completed', result });
  }
  toString = () => `operator ${this.how}(key ${this.key})`;
}

/** Two takers race for one orphan, read once: exactly one takes it, and only if it is an orphan. */
class RaceTakeOvers implements ProtocolCommand {
  constructor(readonly key: number) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    const { store } = real.subject;
    const read = await store.get(real.keys[this.key]!);
    const current = model.claims.get(this.key);
    if (read === null || !current) return expect(read === null && !current, 'get agrees with the model').toBe(true);
    const take = (attempt: number) => store.takeOver(read, claimRequest({ key: read.key, attempt, fingerprint: `fp-${this.key}` }), LEASE_MS);
    const taken = (await Promise.all([take(7), take(8)])).filter((claim): claim is Claim => claim !== null);
    const orphaned = current.state === 'unknown' || (current.state === 'claimed' && !current.leaseAlive);
    expect(taken.length, orphaned ? 'one of two racing takers takes the orphan' : 'nobody takes a live or settled claim').toBe(orphaned ? 1 : 0);
    if (!taken[0]) return;
    Object.assign(current, { state: 'claimed', token: taken[0].token, leaseAlive: true, result: undefined });
    model.handles.push({ claim: taken[0], orphan: read });
  }
  toString = () => `raceTakeOvers(key ${this.key})`;
}

/**
 * A holder records its outcome while a taker, who read the claim as an orphan, takes it over: one of
 * them wins, never both (a record under a token that lost the claim, or a takeover of a settled claim).
 */
class RaceCompleteAndTakeOver implements ProtocolCommand {
  constructor(readonly handle: number) {}
  check = (model: Readonly<Model>) => model.handles.length > 0;
  async run(model: Model, real: Real): Promise<void> {
    const { store } = real.subject;
    const handle = model.handles[this.handle % model.handles.length]!;
    const key = keyIndexOf(model, handle);
    const read = await store.get(handle.claim.key);
    const current = model.claims.get(key);
    if (read === null || !current) return;
    const holds = settles(model, handle) !== undefined;
    const result = { for: handle.claim.key, value: 'raced' };
    const [completed, taken] = await Promise.all([
      store.complete(handle.claim, payload(result)),
      store.takeOver(read, claimRequest({ key: read.key, attempt: 9, fingerprint: `fp-${key}` }), LEASE_MS),
    ]);
    const orphaned = current.token === read.token && (current.state === 'unknown' || (current.state === 'claimed' && !current.leaseAlive));
    expect(completed && taken !== null, 'a record and a takeover of one claim both took effect').toBe(false);
    if (!holds) expect(completed, 'a stale token recorded').toBe(false);
    if (!orphaned) expect(taken, 'a live or settled claim was taken over').toBeNull();
    if (holds && !orphaned) expect(completed, 'the live holder records').toBe(true);
    if (orphaned && !holds) expect(taken, 'an orphan nobody holds is taken').not.toBeNull();
    if (completed) {
      Object.assign(current, { state: 'completed', result });
      await tellWaiters(model, real, key, handle, current.awaited);
    }
    if (taken) {
      Object.assign(current, { state: 'claimed', token: taken.token, leaseAlive: true, result: undefined });
      model.handles.push({ claim: taken, orphan: read });
    }
  }
  toString = () => `raceCompleteAndTakeOver(handle ${this.handle})`;
}

function commandsFor(withOperator: boolean): Array<fc.Arbitrary<ProtocolCommand>> {
  const key = fc.nat({ max: KEYS - 1 });
  const attempt = fc.integer({ min: 1, max: 5 });
  const handle = fc.nat({ max: 50 });
  const commands: Array<fc.Arbitrary<ProtocolCommand>> = [
    fc.tuple(key, attempt).map(([k, a]) => new Begin(k, a)),
    fc.tuple(handle, fc.constantFrom('complete', 'release', 'markUnknown') as fc.Arbitrary<Settle['how']>, fc.nat({ max: 9 })).map(([h, how, v]) => new Settle(h, how, v)),
    fc.tuple(fc.array(handle, { minLength: 1, maxLength: 3 }), fc.constantFrom(0, LEASE_MS)).map(([hs, ms]) => new Renew(hs, ms)),
    fc.tuple(key, attempt, fc.option(handle, { nil: undefined }), fc.boolean()).map(([k, a, h, asking]) => new TakeOver(k, a, h, asking)),
    handle.map((h) => new HandBack(h)),
    key.map((k) => new Read(k)),
    fc.tuple(key, fc.nat({ max: WORKFLOWS.length - 1 })).map(([k, w]) => new AddWaiter(k, w)),
    key.map((k) => new RaceTakeOvers(k)),
    handle.map((h) => new RaceCompleteAndTakeOver(h)),
  ];
  if (withOperator) commands.push(fc.tuple(key, fc.constantFrom('resolve', 'release') as fc.Arbitrary<OperatorChange['how']>, fc.nat({ max: 9 })).map(([k, how, v]) => new OperatorChange(k, how, v)));
  return commands;
}

/** Runs `numRuns` random sequences of up to `maxCommands` steps against `subject()`'s store. */
export async function checkClaimProtocol(subject: () => ProtocolSubject, options: { numRuns: number; maxCommands: number }): Promise<void> {
  const seed = process.env['MODEL_SEED'] === undefined ? undefined : Number(process.env['MODEL_SEED']);
  const withOperator = subject().operator !== undefined;
  await fc.assert(
    fc.asyncProperty(fc.commands(commandsFor(withOperator), { maxCommands: options.maxCommands }), async (commands) => {
      const current = subject();
      const keys = current.keys();
      const model: Model = { claims: new Map(), waiters: new Map(), handles: [], refusals: 0 };
      keyIndexes.set(model, new Map(keys.map((key, index) => [key, index])));
      const ticking = [...commands].map((command) => withTick(command, current));
      await fc.asyncModelRun(() => ({ model, real: { subject: current, keys } }), ticking);
    }),
    { numRuns: options.numRuns, ...(seed === undefined ? {} : { seed }) },
  );
}

function withTick(command: ProtocolCommand, subject: ProtocolSubject): ProtocolCommand {
  return {
    check: (model) => command.check(model),
    run: async (model, real) => {
      await command.run(model, real);
      subject.tick?.();
    },
    toString: () => command.toString(),
  };
}

export const PROTOCOL_KEYS = KEYS;
