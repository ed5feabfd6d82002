/**
 * A shortened chaos run (`npm run chaos` is the long one): worker processes
 * SIGKILLed at random and restarted, Postgres restarted twice, and still no key
 * reaches the vendor twice, every workflow ends completed or refused by name,
 * and no worker process dies on its own.
 */
import { describe, expect, inject, it } from 'vitest';
import { runChaos } from '../../scripts/chaos/chaos.js';
import { printReport, problemsIn } from '../../scripts/chaos/report.js';
import { useTemporal } from '../support/temporal.js';

const temporal = useTemporal();

describe('chaos', () => {
  it('kills workers and restarts Postgres mid-run without a single doubled call', async () => {
    const report = await runChaos({
      client: temporal.client,
      temporalAddress: inject('temporalAddress'),
      workflowBundlePath: inject('workflowBundlePath'),
      workflows: 12,
      activitiesPerWorkflow: 5,
      workers: 3,
      killEveryMs: 2_000,
      reconcile: true,
      log: () => undefined,
    });
    printReport(report, console.log);
    expect(problemsIn(report)).toEqual([]);
    expect(report.kills).toBeGreaterThanOrEqual(1);
    expect(report.postgresRestarts).toBeGreaterThanOrEqual(2);
    expect(report.unexpectedExits).toEqual([]);
    expect(report.keysActedOnce).toBeGreaterThan(0);
    expect(Object.values(report.outcomes).reduce((a, b) => a + b, 0)).toBe(12);
  }, 300_000);
});
