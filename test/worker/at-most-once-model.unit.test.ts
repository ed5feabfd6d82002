/**
 * At most once, whatever the order: random runs of attempts at two actions under the interceptors, on
 * the in-memory store, each attempt's call doing one of what calls do (answer, fail before sending,
 * end with its outcome unknown, hang until answered or failed later, or never come back as when its
 * worker vanished), with leases lapsing between steps. Checked on every run:
 * - a call starts only when every earlier call of its action failed before sending (and its claim was
 *   released): never beside one still running, never after one that answered or may have acted;
 * - an attempt that is answered gets what a call of its own action returned, never another's;
 * - every attempt ends: answered, refused non-retryably by name, or failed retryably (its own call's
 *   failure before sending, or busy), none left waiting.
 *
 * Half the runs give the activity a `reconcile` that asks a vendor who tells the truth: then an orphan
 * is taken over and asked about, and a call may start again, but only when the vendor had not acted,
 * and every answer is the one result the vendor holds.
 *
 * A failure prints fast-check's seed and the shrunk steps; `MODEL_SEED=<seed>` replays a run.
 */
import { ApplicationFailure } from '@temporalio/common';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { IDEMPOTENCY_FAILURE_TYPES, NotSentError, OutcomeUnknownError } from '../../src/index.js';
import { Attempts, callInFlight } from '../support/unit-attempts.js';

// A waiting attempt reads the claim once a poll interval (a second) of real time. Here that would cost
// a second of real time per read, and would let the wall clock, not the steps,
// decide when a read lands. Every such sleep lasts until the model lets a poll interval pass instead:
// once after each step, and once each round of the wind-down.
const sleepers = vi.hoisted(() => new Set<() => void>());
vi.mock('node:timers/promises', async (importOriginal) => ({
  ...(await importOriginal<typeof import('node:timers/promises')>()),
  setTimeout: <T>(_delayMs?: number, value?: T) => new Promise<T | undefined>((resolve) => sleepers.add(() => resolve(value))),
}));

/** A poll interval passes: every attempt asleep (a waiter between two reads of the claim) wakes. */
function pollIntervalPasses(): void {
  const waking = [...sleepers];
  sleepers.clear();
  for (const wake of waking) wake();
}

const LEASE_MS = 30_000;
const ACTIONS = ['+15550001', '+15550002'];

type Behaviour = 'answers' | 'notSent' | 'unknown' | 'hangs';
type Step =
  | { readonly kind: 'attempt'; readonly action: number; readonly behaviour: Behaviour }
  | { readonly kind: 'endHung'; readonly which: number; readonly how: 'answers' | 'notSent' | 'unknown' }
  | { readonly kind: 'lapse' }
  | { readonly kind: 'settle' };

const steps: fc.Arbitrary<Step[]> = fc.array(
  fc.oneof(
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('attempt' as const), action: fc.nat({ max: ACTIONS.length - 1 }), behaviour: fc.constantFrom<Behaviour>('answers', 'notSent', 'unknown', 'hangs') }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('endHung' as const), which: fc.nat({ max: 9 }), how: fc.constantFrom('answers' as const, 'notSent' as const, 'unknown' as const) }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'lapse' as const }) },
    { weight: 2, arbitrary: fc.constant({ kind: 'settle' as const }) },
  ),
  { minLength: 1, maxLength: 14 },
);

/** One call's life: running, or how it ended; and whether the vendor acted on it. */
interface Call {
  readonly action: number;
  ended: 'running' | 'answered' | 'notSent' | 'unknown';
  acted: boolean;
}

/** A vendor that tells the truth when asked: what it did for each action (the result it gave). */
class Vendor {
  readonly acted = new Map<string, { action: string; call: number }>();
  act(to: string, value: { action: string; call: number }): void {
    if (!this.acted.has(to)) this.acted.set(to, value);
  }
}

/** Lets every attempt run as far as it can without the test doing anything. */
async function settle(): Promise<void> {
  for (let turn = 0; turn < 20; turn++) await new Promise<void>((resolve) => setImmediate(resolve));
}

async function runScenario(scenario: readonly Step[], reconciling: boolean, unknownActs: boolean): Promise<void> {
  const vendor = new Vendor();
  const reconcile = async ({ args }: { args: readonly unknown[] }) => {
    const acted = vendor.acted.get(args[0] as string);
    return acted ? { outcome: 'happened' as const, result: acted } : { outcome: 'not-happened' as const };
  };
  const attempts = new Attempts({ leaseMs: LEASE_MS, ...(reconciling ? { activities: { placeCall: { reconcile } } } : {}) });
  const calls: Call[] = [];
  const violations: string[] = [];
  const hung: Array<{ readonly call: Call; readonly flight: ReturnType<typeof callInFlight<{ action: string; call: number }>> }> = [];
  const outcomes: Array<{ readonly action: number; readonly outcome: Promise<{ ok: true; value: unknown } | { ok: false; error: unknown }> }> = [];
  const attemptsMade = ACTIONS.map(() => 0);

  const body = (action: number, behaviour: Behaviour) => async (to: string) => {
    const earlier = calls.filter((call) => call.action === action);
    // Without a reconciler, only a call that failed before sending may be followed by another; with one,
    // only a call the vendor did not act on (it said so when asked).
    const mayHaveActed = earlier.filter((call) => (reconciling ? call.acted || call.ended === 'running' : call.ended !== 'notSent'));
    if (mayHaveActed.length > 0) {
      violations.push(`a call of action ${action} started after calls that ended ${mayHaveActed.map((call) => `${call.ended}${call.acted ? ' (acted)' : ''}`).join(', ')}`);
    }
    const call: Call = { action, ended: 'running', acted: false };
    calls.push(call);
    const value = { action: to, call: calls.length };
    const act = () => {
      call.acted = true;
      vendor.act(to, value);
    };
    switch (behaviour) {
      case 'answers':
        act();
        call.ended = 'answered';
        return value;
      case 'notSent':
        call.ended = 'notSent';
        throw new NotSentError('the vendor refused the connection');
      case 'unknown':
        if (unknownActs) act();
        call.ended = 'unknown';
        throw new OutcomeUnknownError('the line dropped after dialling');
      case 'hangs': {
        // Its request is out: the vendor acts on it, whenever (or whether) its answer comes back.
        if (reconciling) act();
        const flight = callInFlight<{ action: string; call: number }>();
        hung.push({ call, flight });
        return flight.body();
      }
    }
  };

  /** A hung call comes back answered: the vendor acted on it (if it had not yet when the call was sent). */
  const answerHung = ({ call, flight }: (typeof hung)[number]) => {
    if (!call.acted) {
      call.acted = true;
      vendor.act(ACTIONS[call.action]!, { action: ACTIONS[call.action]!, call: calls.indexOf(call) + 1 });
    }
    call.ended = 'answered';
    flight.finish({ action: ACTIONS[call.action]!, call: calls.indexOf(call) + 1 });
  };

  for (const step of scenario) {
    if (step.kind === 'attempt') {
      const attempt = ++attemptsMade[step.action]!;
      const outcome = attempts
        .attempt('placeCall', attempt, { startToCloseTimeoutMs: 60_000 })
        .run(body(step.action, step.behaviour), ACTIONS[step.action]!)
        .then(
          (value: unknown) => ({ ok: true as const, value }),
          (error: unknown) => ({ ok: false as const, error }),
        );
      outcomes.push({ action: step.action, outcome });
    } else if (step.kind === 'endHung') {
      const running = hung.filter(({ call }) => call.ended === 'running');
      const chosen = running[step.which % Math.max(running.length, 1)];
      if (!chosen) continue;
      if (step.how === 'answers') {
        answerHung(chosen);
      } else if (step.how === 'notSent' && !chosen.call.acted) {
        chosen.call.ended = 'notSent';
        chosen.flight.fail(new NotSentError('the vendor refused the connection'));
      } else {
        chosen.call.ended = 'unknown';
        chosen.flight.fail(new OutcomeUnknownError('the line dropped after dialling'));
      }
    } else if (step.kind === 'lapse') {
      // Every lease lapses: as when the workers holding them vanished (or paused) for longer than a lease.
      attempts.clock.advance(LEASE_MS + 1);
    }
    pollIntervalPasses();
    await settle();
  }

  // Calls never answered belong to workers that vanished: their leases lapse, and whoever waits on them
  // must end (refused) rather than wait on. Only then do the vanished workers come back and answer. A
  // call that started meanwhile (a waiter that found the key free) vanishes and comes back the same way.
  const results = outcomes.map(({ action, outcome }) => {
    const ending = { action, result: undefined as Awaited<typeof outcome> | undefined };
    void outcome.then((result) => (ending.result = result));
    return ending;
  });
  // A round or two ends them all (every lease lapses, every waiter reads, every call comes back); the bound
  // only stops a hang looping.
  for (let round = 0; round < 10 && results.some(({ result }) => result === undefined); round++) {
    attempts.clock.advance(LEASE_MS + 1);
    pollIntervalPasses();
    await settle();
    for (const running of hung.filter(({ call }) => call.ended === 'running')) answerHung(running);
    await settle();
  }
  const waiting = results.filter(({ result }) => result === undefined).length;
  expect(waiting, 'attempts left waiting').toBe(0);
  const ended = results.map(({ action, result }) => ({ action, result: result! }));

  for (const { action, result } of ended) {
    if (result.ok) {
      const value = result.value as { action: string; call: number };
      expect(value.action, 'an attempt is answered with a result of its own action').toBe(ACTIONS[action]);
      expect(calls[value.call - 1]?.action, 'the answer is what a call of this action returned').toBe(action);
      if (reconciling) expect(value, 'the answer is the one result the vendor holds for the action').toEqual(vendor.acted.get(ACTIONS[action]!));
      continue;
    }
    const { error } = result;
    if (error instanceof ApplicationFailure && (IDEMPOTENCY_FAILURE_TYPES as readonly string[]).includes(error.type ?? '')) {
      expect(error.type === 'IdempotencyClaimBusy' || error.nonRetryable, `${error.type} is retryable only when busy`).toBe(true);
      continue;
    }
    // Its own call's failure, handed back for Temporal to retry: one before sending; or, with a reconciler,
    // one of unknown outcome too (the next attempt asks the vendor).
    const ownFailure = error instanceof NotSentError || (reconciling && error instanceof OutcomeUnknownError);
    expect(ownFailure, `an attempt fails only by a refusal by name, or its own call's failure (got ${String(error)})`).toBe(true);
  }
  expect(violations).toEqual([]);
}

describe('at most once, against every order of attempts, outcomes and lapsed leases', () => {
  it('never starts a call beside or after one that may have acted, and ends every attempt answered or refused by name', async () => {
    const seed = process.env['MODEL_SEED'] === undefined ? undefined : Number(process.env['MODEL_SEED']);
    await fc.assert(
      fc.asyncProperty(steps, fc.boolean(), fc.boolean(), (scenario, reconciling, unknownActs) => runScenario(scenario, reconciling, unknownActs)),
      { numRuns: 300, ...(seed === undefined ? {} : { seed }) },
    );
  }, 120_000);
});
