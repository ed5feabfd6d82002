/**
 * Compile-time checks of the options' types (`npm run typecheck` compiles this
 * file; each `@ts-expect-error` fails the build if the error it expects is gone).
 */
import pg from 'pg';
import { IdempotencyPlugin, PostgresClaimStore, idempotencyInterceptors } from '../../src/index.js';

const store = new PostgresClaimStore({ pool: new pg.Pool() });
const activities = {
  chargeCard: async (charge: { orderId: string; cents: number }, _traceId: string) => `ch_${charge.orderId}`,
  getPaymentStatus: async (_paymentId: string) => 'pending' as const,
};

export function typedSettingsSeeTheActivitiesParameters(): unknown[] {
  return [
    idempotencyInterceptors<typeof activities>({
      store,
      activities: {
        chargeCard: { keyArgs: ([charge]) => [charge.orderId, charge.cents], key: ({ args: [charge] }) => `charge:${charge.orderId}` },
        getPaymentStatus: false,
      },
    }),
    new IdempotencyPlugin<typeof activities>({ store, guard: 'listed', activities: { chargeCard: { vendorDedup: true } } }),
  ];
}

export function typedSettingsCatchMistakes(): unknown[] {
  return [
    // @ts-expect-error orderID is not a property of the activity's first parameter
    idempotencyInterceptors<typeof activities>({ store, activities: { chargeCard: { keyArgs: ([charge]) => charge.orderID } } }),
    // @ts-expect-error chargeCrad is not one of the activities
    idempotencyInterceptors<typeof activities>({ store, activities: { chargeCrad: false } }),
  ];
}

export function untypedSettingsSeeAnyArguments(): unknown {
  // As the README shows it, without the activities' type: the arguments are any[].
  return idempotencyInterceptors({ store, activities: { chargeCard: { keyArgs: (args) => [args[0].orderId, args[0].amountCents] } } });
}
