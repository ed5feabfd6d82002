/** What a crash point is, and what it is given to reach its moment and kill there. */
import type { WorkflowHandle } from '@temporalio/client';
import type { FakeVendor } from '../../../activities/fake-vendor.js';
import type { ProxiedWorker } from './proxied-worker.js';
import type { RunObservations } from './run-observations.js';
import type { Random } from '../../../dev/seeded-random.js';
import type { CliTargets } from './operator-cli.js';

export interface CrashContext {
  /** The worker that takes the first attempt; every connection of it goes through its own proxies. */
  readonly victim: ProxiedWorker;
  readonly vendor: FakeVendor;
  readonly observations: RunObservations;
  readonly random: Random;
  /** Aborted when the run stops waiting for the moment (the point was not reached). */
  readonly signal: AbortSignal;
  /** Another worker on the run's task queue, proxied like the victim; the run stops it at its end. */
  spawnWorker(options?: { readonly vendorStalled?: boolean }): Promise<ProxiedWorker>;
  /** Records what the run did, for its log line. */
  note(text: string): void;
}

export interface AfterCrashContext extends CrashContext {
  readonly handle: WorkflowHandle;
  /** Where a person's CLI connects, directly (no proxy). */
  readonly cli: CliTargets;
}

export interface CrashPoint {
  /** As `--points` names it. */
  readonly id: string;
  /** As the table prints it. */
  readonly name: string;
  /** `either`: each run draws it from its seed. */
  readonly reconcile: 'on' | 'off' | 'either';
  /** Charges in the run's workflow, drawn from the run's seed; one when absent. */
  charges?(random: Random): number;
  /** The vendor's delay before acting and again before answering, in ms. */
  readonly vendorLatencyMs?: number;
  /** The workflow waits in `resumable()` for a person after a refusal. */
  readonly waitForPerson?: boolean;
  /**
   * Arms the moment and kills there; true once it did, false if `signal` ended the wait first.
   * Everything it scripts or stalls before its first `await` is in place before the workflow starts.
   */
  crash(context: CrashContext): Promise<boolean>;
  /** After the kills a fresh worker runs; what a person does next, if anything; false if it could not. */
  afterCrash?(context: AfterCrashContext): Promise<boolean>;
}

/** Resolves true with `promise`, or false once `signal` aborts first (or `promise` fails: the moment never came). */
export function before(signal: AbortSignal, promise: Promise<unknown>): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const settle = (reached: boolean) => {
      signal.removeEventListener('abort', onAbort);
      resolve(reached);
    };
    const onAbort = () => settle(false);
    signal.addEventListener('abort', onAbort, { once: true });
    void promise.then(
      () => settle(true),
      () => settle(false),
    );
  });
}
