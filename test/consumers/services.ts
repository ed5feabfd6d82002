/** The real services the fixtures' smoke runs need, started once for all of them by the repo's dev helpers. */
import { startPostgres } from '../../dev/postgres.js';
import { startTemporal } from '../../dev/temporal-server.js';

export interface Services {
  readonly temporalAddress: string;
  readonly databaseUrl: string;
  stop(): Promise<void>;
}

export async function startServices(log: (line: string) => void): Promise<Services> {
  const [postgres, temporal] = await Promise.allSettled([startPostgres(), startTemporal({ log })]);
  const stop = async () => {
    await Promise.allSettled([
      temporal.status === 'fulfilled' ? temporal.value.stop() : undefined,
      postgres.status === 'fulfilled' ? postgres.value.stop() : undefined,
    ]);
  };
  if (postgres.status === 'rejected' || temporal.status === 'rejected') {
    await stop();
    throw postgres.status === 'rejected' ? postgres.reason : (temporal as PromiseRejectedResult).reason;
  }
  return { temporalAddress: temporal.value.address, databaseUrl: postgres.value.connectionString, stop };
}
