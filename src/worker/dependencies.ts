/** What every activity execution of one worker shares: its options, codec, lease keeper, metrics and redirect watch. */
import type { LeaseKeeper } from './lease-keeper.js';
import type { IdempotencyMetrics } from './metrics.js';
import type { ResolvedOptions } from './options.js';
import type { RedirectedWrites } from './redirected-writes.js';
import type { ResultCodec } from './result-codec.js';

export interface InterceptorDependencies {
  readonly options: ResolvedOptions;
  readonly codec: ResultCodec;
  readonly leases: LeaseKeeper;
  readonly metrics: IdempotencyMetrics;
  readonly redirects: RedirectedWrites;
}
