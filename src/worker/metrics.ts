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

  /** An orphaned call the vendor was asked about, by its answer (happened, not-happened, unknown). */
  reconciled(meter: MetricMeter, answer: string): void {
    meter.createCounter('idempotency_reconciliations', '1', 'Orphaned calls reconciled with the vendor, by answer').add(1, { answer });
  }

  /** An attempt that waited for a still-running earlier attempt. */
  waited(meter: MetricMeter): void {
    meter.createCounter('idempotency_busy_waits', '1', 'Waits for a live owner').add(1);
  }

  /** How long claiming the key took (the Postgres round trip before the call). */
  claimLatency(meter: MetricMeter, ms: number): void {
    meter.createHistogram('idempotency_claim_latency', 'float', 'ms', 'Time to claim a key before the call').record(ms);
  }

  /** A lease renewal that failed or did not answer in time; the worker's leases lapse if this persists. */
  leaseRenewalFailed(meter: MetricMeter): void {
    meter.createCounter('idempotency_lease_renewal_errors', '1', 'Lease renewals that failed or timed out').add(1);
  }
}
