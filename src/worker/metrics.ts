/**
 * The interceptor's metrics, on the activity's Temporal metric meter, so they
 * reach whatever exporter the worker's Runtime has (Prometheus, OTel) with the
 * SDK's own tags (namespace, task queue, activity type).
 */
import type { MetricMeter } from '@temporalio/common';

export class IdempotencyMetrics {
  /** This attempt won the claim and will call the activity. */
  claimed(meter: MetricMeter): void {
    meter.createCounter('idempotency_claims', '1', 'Claims won: activity calls let through').add(1);
  }

  /** A repeat answered from the recorded result; the activity was not called. */
  replayed(meter: MetricMeter): void {
    meter.createCounter('idempotency_replays', '1', 'Repeats answered from the recorded result').add(1);
  }

  /** A refusal, by failure type (IdempotencyOrphanedClaim, IdempotencyClaimBusy, …). */
  refused(meter: MetricMeter, type: string): void {
    meter.createCounter('idempotency_refusals', '1', 'Calls refused, by failure type').add(1, { type });
  }

  /** An attempt that waited for a still-running earlier attempt. */
  waited(meter: MetricMeter): void {
    meter.createCounter('idempotency_busy_waits', '1', 'Waits for a live owner').add(1);
  }

  /** How long claiming the key took (the Postgres round trip before the call). */
  claimLatency(meter: MetricMeter, ms: number): void {
    meter.createHistogram('idempotency_claim_latency', 'float', 'ms', 'Time to claim a key before the call').record(ms);
  }
}
