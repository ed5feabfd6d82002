/**
 * `idempotencyInterceptors(options)`: the activity interceptor factories to
 * register on a worker, in the one correct order.
 */
import { Runtime } from '@temporalio/worker';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { auditLedgerInterceptors } from './audit-interceptor.js';
import { leaseKeeperFor } from './lease-keeper.js';
import { IdempotentActivityInbound } from './interceptor.js';
import { resolveOptions } from './options.js';
import type { IdempotencyOptions } from './options.js';
import { ResultCodec } from './result-codec.js';

/**
 * Put the result first in `interceptors.activity`: the first factory is the outermost,
 * and idempotency must see every call before anything else acts on it.
 *
 * ```ts
 * Worker.create({ ..., interceptors: { activity: [...idempotencyInterceptors({ store })] } });
 * ```
 */
export function idempotencyInterceptors(options: IdempotencyOptions): ActivityInterceptorsFactory[] {
  const resolved = resolveOptions(options);
  const codec = new ResultCodec(resolved.payloadConverter, resolved.payloadCodecs);
  const leases = leaseKeeperFor(resolved.store, resolved.leaseMs, (error) =>
    Runtime.instance().logger.warn('Idempotency: renewing claim leases failed; they lapse if this persists', { error }),
  );
  const idempotency: ActivityInterceptorsFactory = (context) => ({
    inbound: new IdempotentActivityInbound(context, resolved, codec, leases),
  });
  // Audit inside idempotency: Idempotent(Recording(activity)), so a replay never reaches the ledger.
  return resolved.auditLedger ? [idempotency, ...auditLedgerInterceptors({ ledger: resolved.auditLedger })] : [idempotency];
}
