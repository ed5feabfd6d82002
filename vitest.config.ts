import { configDefaults, defineConfig } from 'vitest/config';

/**
 * The unit tier: no services at all (no Postgres, no Temporal server, no workflow bundle). The key
 * derivation, the testing module, and every `*.unit.test.ts` (the interceptor's decisions on the
 * in-memory store). A file that needs a service belongs in the integration tier.
 */
const UNIT_TESTS = ['test/key/**/*.test.ts', 'test/testing/**/*.test.ts', 'test/**/*.unit.test.ts'];

export default defineConfig({
  test: {
    pool: 'forks',
    // Two cores: more parallel files only make the Temporal and Postgres servers slower.
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: UNIT_TESTS,
          // Seconds, not minutes: a unit test that takes longer is waiting on something it should not.
          testTimeout: 10_000,
          // Runs before the integration tier (which `npm test` starts only when this one passed).
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...UNIT_TESTS],
          globalSetup: ['test/support/global-setup.ts'],
          setupFiles: ['test/support/runtime.ts'],
          // Real servers and real worker processes: generous, but a hang still ends.
          testTimeout: 120_000,
          hookTimeout: 180_000,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
