/**
 * Worker processes SIGKILLed on real services, in one file so the two runs (each dozens of worker
 * processes) never load the machine at once:
 * - a shortened chaos run (`npm run chaos` is the long one): workers killed at random and restarted,
 *   Postgres restarted twice, and still no key reaches the vendor twice, every workflow ends completed
 *   or refused by name, and no worker process dies on its own;
 * - a worker killed at each named point of an attempt (`npm run chaos -- --crash-points` is the long
 *   run): one seeded run per point, each kill reached from outside (the vendor, the claims table, the
 *   worker's own TCP proxies). No order is charged twice, no workflow is told "done" with anything but
 *   the vendor's one charge, and every workflow ends completed or refused by name.
 *   CRASH_POINTS_SEED=<seed> replays a run;
 * - one worker cut off from Postgres, and from Temporal (held, stalled, and cut), while its calls are in
 *   flight, held past the lease, then healed (`npm run chaos -- --partitions` is the long run): one
 *   seeded run per kind. No order charged twice or lost, every workflow ends completed or refused by
 *   name, no worker exits, and every claim taken over while its worker was cut off from Postgres has
 *   that worker's late write refused by its token and logged. PARTITIONS_SEED=<seed> replays a run.
 */
import { describe, expect, inject, it } from 'vitest';
import { runChaos } from '../../scripts/chaos/chaos.js';
import { printReport, problemsIn } from '../../scripts/chaos/report.js';
import { runCampaign } from '../../scripts/chaos/crash-points/campaign.js';
import { CRASH_POINTS } from '../../scripts/chaos/crash-points/points.js';
import { formatTable, pointRows, problemsIn as crashProblemsIn } from '../../scripts/chaos/crash-points/table.js';
import { runPartitionCampaign } from '../../scripts/chaos/partitions/campaign.js';
import { PARTITION_KINDS } from '../../scripts/chaos/partitions/kinds.js';
import { formatPartitionTable, partitionProblems, partitionRows } from '../../scripts/chaos/partitions/table.js';
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

describe('a worker killed at every crash point', () => {
  it('never charges an order twice, never loses one, and leaves no workflow open', async () => {
    const seed = Number(process.env['CRASH_POINTS_SEED'] ?? Math.floor(Math.random() * 2 ** 31));
    console.log(`crash points: seed ${seed} (CRASH_POINTS_SEED=${seed} replays it)`);
    const runs = await runCampaign({
      client: temporal.client,
      temporalAddress: inject('temporalAddress'),
      databaseUrl: inject('databaseUrl'),
      workflowBundlePath: inject('workflowBundlePath'),
      points: CRASH_POINTS,
      seed,
      runsPerPoint: 1,
      // Three at once: each run starts several worker processes, and all nine at once starved the suite's other files.
      concurrency: 3,
      log: console.log,
    });
    console.log(formatTable(pointRows(runs, CRASH_POINTS.map((point) => point.name))));
    expect(crashProblemsIn(runs)).toEqual([]);
    expect(runs.map((run) => run.facts.point)).toHaveLength(CRASH_POINTS.length);
    const total = (of: (verdict: (typeof runs)[number]['verdict']) => number) => runs.reduce((sum, run) => sum + of(run.verdict), 0);
    expect({ doubleCalls: total((v) => v.doubleCalls), lostActions: total((v) => v.lostActions), open: total((v) => v.open) }).toEqual({
      doubleCalls: 0,
      lostActions: 0,
      open: 0,
    });
  }, 240_000);
});

describe('a worker cut off from Postgres or Temporal while its calls are in flight, then healed', () => {
  it('never charges an order twice, never loses one, and refuses the late writes of a worker whose claims were taken over', async () => {
    const seed = Number(process.env['PARTITIONS_SEED'] ?? Math.floor(Math.random() * 2 ** 31));
    console.log(`partitions: seed ${seed} (PARTITIONS_SEED=${seed} replays it)`);
    const runs = await runPartitionCampaign({
      client: temporal.client,
      temporalAddress: inject('temporalAddress'),
      databaseUrl: inject('databaseUrl'),
      workflowBundlePath: inject('workflowBundlePath'),
      kinds: PARTITION_KINDS,
      seed,
      runsPerKind: 1,
      concurrency: 2,
      log: console.log,
    });
    const rows = partitionRows(runs, PARTITION_KINDS.map((kind) => kind.name));
    console.log(formatPartitionTable(rows));
    expect(partitionProblems(runs)).toEqual([]);
    expect(rows.map((row) => [row.kind, row.reached, row.doubleCalls, row.lostActions, row.open])).toEqual(
      PARTITION_KINDS.map((kind) => [kind.name, 1, 0, 0, 0]),
    );
    // Cut off from Postgres its lease lapses: every claim it held is taken over, and its late write on each refused.
    const cutOffFromPostgres = PARTITION_KINDS.filter((kind) => kind.service === 'postgres').map((kind) => kind.name);
    for (const row of rows.filter((row) => cutOffFromPostgres.includes(row.kind))) {
      expect(row.takenOver).toBeGreaterThan(0);
      expect(row.lateRefused).toBe(row.takenOver);
    }
  }, 180_000);
});
