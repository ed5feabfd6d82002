/**
 * A real Postgres failover (`npm run failover` is the long one, with the asynchronous run beside it):
 * a primary and a synchronous standby from the machine's Postgres binaries, worker processes
 * reaching the primary through HAProxy, the primary's host SIGKILLed with calls in flight, the
 * standby promoted, the proxy following it. Nothing a worker was told it had claimed is lost, no
 * call runs twice, no action is lost, every workflow ends completed or refused by name, and no
 * worker process dies.
 */
import { describe, expect, inject, it } from 'vitest';
import { runFailover } from '../../scripts/failover/failover.js';
import { printTable, problemsIn } from '../../scripts/failover/report.js';
import { haproxyAvailable } from '../support/haproxy.js';
import { useTemporal } from '../support/temporal.js';

const temporal = useTemporal();
const WORKFLOWS = 12;

describe.skipIf(!haproxyAvailable())('a Postgres failover behind HAProxy', () => {
  it('to a synchronous standby: no call twice, no action lost, every workflow ended by name, no worker dead', async () => {
    const report = await runFailover({
      client: temporal.client,
      temporalAddress: inject('temporalAddress'),
      workflowBundlePath: inject('workflowBundlePath'),
      replication: 'sync',
      seed: 27,
      workflows: WORKFLOWS,
      activitiesPerWorkflow: 5,
      workers: 2,
      workflowDeadlineMs: 60_000,
      // Stopped before the test's own timeout: Postgres runs in a session of its own and would outlive this process.
      signal: AbortSignal.timeout(110_000),
      log: () => undefined,
    });
    printTable([report], console.log);
    expect(problemsIn(report)).toEqual([]);
    // The kill landed mid-run: calls had gone out, and others held claims without an outcome.
    expect(report.actionsBeforeKill).toBeGreaterThan(0);
    expect(report.openOnDeadPrimary).toBeGreaterThan(0);
    expect(Object.values(report.outcomes).reduce((sum, count) => sum + count, 0)).toBe(WORKFLOWS);
  }, 120_000);
});
