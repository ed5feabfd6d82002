/**
 * The outermost activity interceptor in both runs: how long everything inside
 * it (the idempotency interceptor, if registered, and the activity) takes per
 * execution. The difference between the runs is what idempotency adds.
 */
import { performance } from 'node:perf_hooks';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';

export class ActivityTimer {
  /** Milliseconds per execution since the last reset. */
  readonly samples: number[] = [];

  readonly factory: ActivityInterceptorsFactory = () => ({
    inbound: {
      execute: async (input, next) => {
        const started = performance.now();
        try {
          return await next(input);
        } finally {
          this.samples.push(performance.now() - started);
        }
      },
    },
  });

  reset(): void {
    this.samples.length = 0;
  }
}
