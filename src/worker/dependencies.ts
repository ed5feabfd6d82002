/** What every activity execution of one worker shares: its options, codec, lease keeper and metrics. */
import type { LeaseKeeper } from './lease-keeper.js';
import type { IdempotencyMetrics } from './metrics.js';
import type { ResolvedOptions } from './options.js';
import type { ResultCodec } from './result-codec.js';

export interface InterceptorDependencies {
  readonly options: ResolvedOptions;
  readonly codec: ResultCodec;
  readonly leases: LeaseKeeper;
  readonly metrics: IdempotencyMetrics;
}
