import { configDefaults, defineConfig } from 'vitest/config';
import { LongestFirst } from './test/support/longest-first.js';

/**
 * The unit tier: no services at all (no Postgres, no Temporal server, no workflow bundle). The key
 * derivation, the testing module, and every `*.unit.test.ts` (the interceptor's decisions on the
 * in-memory store). A file that needs a service belongs in the integration tier.
 */
/** `TEST_INTEGRATION_WORKERS=2 npm test` on a slower machine. */
const INTEGRATION_WORKERS = Number(process.env.TEST_INTEGRATION_WORKERS ?? 4);

const UNIT_TESTS = ['test/key/**/*.test.ts', 'test/testing/**/*.test.ts', 'test/**/*.unit.test.ts'];
/**
 * The proofs: campaigns of SIGKILLed workers, Postgres restarts and a real failover, minutes each and
 * the whole machine while they run. `npm run test:proofs`, which CI runs after `npm test`.
 */
const PROOFS = ['test/chaos/chaos-run.test.ts', 'test/deploy/failover.test.ts'];

/** Real servers and real worker processes, started once per run by the global setup. */
const WITH_SERVICES = {
  globalSetup: ['test/support/global-setup.ts'],
  setupFiles: ['test/support/runtime.ts'],
  // Generous, but a hang still ends.
  testTimeout: 120_000,
  hookTimeout: 180_000,
};

export default defineConfig({
  test: {
    pool: 'forks',
    sequence: { sequencer: LongestFirst },
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
          // Three at once: a few files wait on real timers (the wait for a live owner), and at two the
          // tier took 41 s where three take 27 s.
          maxWorkers: 3,
          // Runs before the integration tier (which `npm test` starts only when this one passed).
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          // Four files at once: they wait on servers and timers far more than they compute (at two, the
          // cores were 65 % busy), and each has its own schema and task queues, so none sees another's state.
          maxWorkers: INTEGRATION_WORKERS,
          include: ['test/**/*.test.ts'],
          // TEST_EXCLUDE: globs, comma-separated, the peer-range runs leave to the main run (test/peers/run.ts).
          exclude: [...configDefaults.exclude, ...UNIT_TESTS, ...PROOFS, ...(process.env.TEST_EXCLUDE?.split(',').filter(Boolean) ?? [])],
          ...WITH_SERVICES,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: 'proofs',
          include: PROOFS,
          // One at a time: each takes the whole machine, and beside another its timings would not hold.
          maxWorkers: 1,
          ...WITH_SERVICES,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
