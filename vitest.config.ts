import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: ['test/support/runtime.ts'],
    // Real servers and real worker processes: generous, but a hang still ends.
    testTimeout: 120_000,
    hookTimeout: 180_000,
    pool: 'forks',
    // Two cores: more parallel files only make the Temporal and Postgres servers slower.
    maxWorkers: 2,
  },
});
