/**
 * `idempotencyInterceptors(options)`: the activity interceptor factories to
 * register on a worker, in the one correct order.
 */
import { Runtime } from '@temporalio/worker';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { auditLedgerInterceptors } from './audit-interceptor.js';
import { IdempotencyConfigError } from '../errors.js';
import { LeaseKeeper } from './lease-keeper.js';
import { IdempotentActivityInboundInterceptor } from './interceptor.js';
import { IdempotencyMetrics } from './metrics.js';
import { resolveOptions } from './options.js';
import type { AnyActivity, IdempotencyOptions } from './options.js';
import { misconfigured } from './refusals.js';
import { markGuarded, markUnguarded } from './current-call.js';
import { ResultCodec } from './result-codec.js';
import { RedirectedWrites } from './redirected-writes.js';

/**
 * Put the result first in `interceptors.activity`: the first factory is the outermost,
 * and idempotency must see every call before anything else acts on it.
 *
 * ```ts
 * Worker.create({ ..., interceptors: { activity: [...idempotencyInterceptors({ store })] } });
 * ```
 */
export function idempotencyInterceptors<Activities extends object = Record<string, AnyActivity>>(
  options: IdempotencyOptions<Activities>,
): ActivityInterceptorsFactory[] {
  const resolved = resolveOptions(options);
  const runtimeLogger = () => Runtime.instance().logger;
  const metrics = new IdempotencyMetrics();
  const deps = {
    options: resolved,
    codec: new ResultCodec(resolved.payloadConverter, resolved.payloadCodecs),
    // The worker's own: it renews the claims this worker's attempts hold, in one statement per interval.
    leases: new LeaseKeeper(resolved.store, resolved.leaseMs, (error) => {
      runtimeLogger().warn('Idempotency: renewing claim leases failed; they lapse if this persists', { error });
      // On the Runtime's meter: a renewal serves every activity the worker runs, so it has no activity's labels.
      metrics.leaseRenewalFailed(Runtime.instance().metricMeter);
    }),
    metrics,
    // A write the vendor answered with a redirect makes a later failure of the same attempt ambiguous.
    redirects: new RedirectedWrites(),
  };
  const idempotency: ActivityInterceptorsFactory = (context) => {
    if (!markGuarded(context)) {
      // The SDK fails the activity with this (before it runs), non-retryably.
      throw misconfigured(
        new IdempotencyConfigError(
          'interceptors.activity',
          'idempotencyInterceptors() is registered twice on this worker; the inner copy would wait on the outer ' +
            "copy's claim until IdempotencyClaimBusy. Register it once (or use IdempotencyPlugin).",
        ),
        context.info.activityType,
      );
    }
    let settings;
    try {
      settings = resolved.settingsFor(context.info.activityType, context.log);
    } catch (error) {
      if (error instanceof IdempotencyConfigError) throw misconfigured(error, context.info.activityType);
      throw error;
    }
    // Not a write (a read, a poll): no claim, no record; it runs on every attempt, as without the library.
    if (!settings.guarded) return markUnguarded(context);
    return { inbound: new IdempotentActivityInboundInterceptor(context, deps) };
  };
  // Audit inside idempotency: Idempotent(Recording(activity)), so a replay never reaches the ledger.
  const audit = resolved.auditLedger
    ? auditLedgerInterceptors({ ledger: resolved.auditLedger, payloadConverter: resolved.payloadConverter, payloadCodecs: resolved.payloadCodecs })
    : [];
  return [idempotency, ...audit];
}
