/**
 * A worker SIGKILLed at each named point of an attempt (`npm run chaos -- --crash-points` is the
 * long run): one seeded run per point, on real services, each kill reached from outside (the
 * vendor, the claims table, the worker's own TCP proxies). No order is charged twice, no workflow
 * is told "done" with anything but the vendor's one charge, and every workflow ends completed or
 * refused by name. CRASH_POINTS_SEED=<seed> replays a run.
 */
import { describe, expect, inject, it } from 'vitest';
import { runCampaign } from '../../scripts/chaos/crash-points/campaign.js';
import { CRASH_POINTS } from '../../scripts/chaos/crash-points/points.js';
import { formatTable, pointRows, problemsIn } from '../../scripts/chaos/crash-points/table.js';
import { useTemporal } from '../support/temporal.js';

const temporal = useTemporal();

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
      // Every point at once: the runs wait on worker start-ups and three-second attempt timeouts far more than they compute.
      concurrency: CRASH_POINTS.length,
      log: console.log,
    });
    console.log(formatTable(pointRows(runs, CRASH_POINTS.map((point) => point.name))));
    expect(problemsIn(runs)).toEqual([]);
    expect(runs.map((run) => run.facts.point)).toHaveLength(CRASH_POINTS.length);
    const total = (of: (verdict: (typeof runs)[number]['verdict']) => number) => runs.reduce((sum, run) => sum + of(run.verdict), 0);
    expect({ doubleCalls: total((v) => v.doubleCalls), lostActions: total((v) => v.lostActions), open: total((v) => v.open) }).toEqual({
      doubleCalls: 0,
      lostActions: 0,
      open: 0,
    });
  }, 120_000);
});
