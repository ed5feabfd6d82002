/**
 * Unit tests of a user's activities under the idempotency interceptor, without
 * a worker, Temporal or Postgres: each attempt is a MockActivityEnvironment
 * (from `@temporalio/testing`, the one place this library loads it) with the
 * interceptors registered as a worker registers them, so `idempotencyKey()`
 * works inside the activity and a repeat is answered from the record.
 */
import type { Info } from '@temporalio/activity';
import type { ActivityFunction } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { MockActivityEnvironmentOptions } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import type { ClaimStore } from '../store/claim-store.js';
import type { AnyActivity, IdempotencyOptions } from '../worker/options.js';
import { idempotencyInterceptors } from '../worker/registration.js';
import { InMemoryClaimStore } from './in-memory-claim-store.js';
import { InvalidArgumentError } from '../errors.js';

export interface IdempotentActivityEnvironmentOptions<Activities extends object = Record<string, AnyActivity>>
  extends Omit<IdempotencyOptions<Activities>, 'store'> {
  /** Where claims are kept. Default: a new `InMemoryClaimStore` on the system clock; pass your own to look into it. */
  readonly store?: ClaimStore;
  /**
   * What every attempt's activity info starts from (over `@temporalio/testing`'s defaults): the
   * workflow it runs in, its namespace, its timeouts. Each attempt may override it.
   */
  readonly info?: Partial<Info>;
  /**
   * Passed to each MockActivityEnvironment: its client, metric meter, logger (default: warnings and
   * errors only) and interceptors, which run inside the idempotency interceptor, as on a worker.
   */
  readonly mockOptions?: MockActivityEnvironmentOptions;
}

/** One attempt's activity info: which activity type it is, at least, since settings and keys go by it. */
export type AttemptInfo = Partial<Info> & { readonly activityType: string };

/**
 * Runs activities as a worker with `idempotencyInterceptors(options)` runs them. Each `run` is one
 * attempt: the first of an action calls the activity and records its result; a repeat (same
 * workflow, activity type and arguments, in the default scope) returns the recorded result without
 * calling it.
 */
export class IdempotentActivityEnvironment<Activities extends object = Record<string, AnyActivity>> {
  readonly store: ClaimStore;
  private readonly interceptors: readonly ActivityInterceptorsFactory[];
  private readonly info: Partial<Info>;
  private readonly mockOptions: MockActivityEnvironmentOptions;

  constructor(options: IdempotentActivityEnvironmentOptions<Activities> = {}) {
    const { store = new InMemoryClaimStore(), info = {}, mockOptions = {}, ...idempotency } = options ?? {};
    this.store = store;
    this.info = info;
    this.mockOptions = mockOptions;
    this.interceptors = idempotencyInterceptors<Activities>({ ...idempotency, store } as IdempotencyOptions<Activities>);
  }

  /**
   * One attempt of `activity`, with `args`. Its activity type is the function's name, as a worker
   * registers `{ chargeCard }`; use `attempt({ activityType })` for another name or other info.
   */
  run<P extends unknown[], R>(activity: ActivityFunction<P, R>, ...args: P): Promise<R> {
    if (typeof activity !== 'function') {
      throw new InvalidArgumentError('activity', `IdempotentActivityEnvironment.run needs the activity function first; got ${typeof activity}.`);
    }
    if (!activity.name) {
      throw new InvalidArgumentError(
        'activity',
        'IdempotentActivityEnvironment.run: this activity function has no name to register it by; ' +
          "run it with attempt({ activityType: 'chargeCard' }).run(fn, ...args).",
      );
    }
    return this.attempt({ activityType: activity.name }).run(activity, ...args);
  }

  /**
   * A MockActivityEnvironment for one attempt, with `info` over the environment's own, under the
   * interceptors: run the activity with its `run`, cancel it with `cancel`, hear its heartbeats.
   */
  attempt(info: AttemptInfo): MockActivityEnvironment {
    if (typeof info?.activityType !== 'string' || info.activityType === '') {
      throw new InvalidArgumentError(
        'info',
        "IdempotentActivityEnvironment.attempt needs the activity type the attempt runs as, e.g. attempt({ activityType: 'chargeCard' }).",
      );
    }
    return new MockActivityEnvironment(
      { ...this.info, ...info },
      {
        logger: new DefaultLogger('WARN'),
        ...this.mockOptions,
        // First is outermost, as on a worker: idempotency sees the call before anything else does.
        interceptors: [...this.interceptors, ...(this.mockOptions.interceptors ?? [])],
      },
    );
  }
}
