/**
 * The chaos report fails a run that did not restart Postgres as often as it
 * was asked to (issue 9's bar: at least twice mid-run): one that finished
 * first, and one on a DATABASE_URL server it cannot restart, which says why.
 * No services.
 */
import { describe, expect, it } from 'vitest';
import { restartsImpossibleOn } from '../../scripts/chaos/chaos.js';
import { problemsIn } from '../../scripts/chaos/report.js';
import type { ChaosReport } from '../../scripts/chaos/report.js';

const clean: ChaosReport = {
  activities: 10,
  workflows: 2,
  kills: 3,
  postgresRestarts: 2,
  postgresRestartsWanted: 2,
  postgresRestartsImpossible: null,
  seconds: 30,
  keysActedOnce: 10,
  keysActedTwice: [],
  keysSentTwice: [],
  actionsRepeated: [],
  vendorReplays: 0,
  outcomes: { completed: 2 },
  openClaims: [],
  reconcile: false,
  reconciliations: {},
  unexpectedExits: [],
};

describe('the chaos report and Postgres restarts', () => {
  it('passes a run that restarted Postgres as often as asked', () => {
    expect(problemsIn(clean)).toEqual([]);
  });

  it('fails a run whose workflows finished before the second restart', () => {
    expect(problemsIn({ ...clean, postgresRestarts: 1 })).toEqual([expect.stringMatching(/restarted 1 time\(s\) mid-run, not the 2 asked for: the workflows finished first/)]);
  });

  it('fails a run on a DATABASE_URL server, saying it could not restart it', () => {
    const impossible = restartsImpossibleOn({ embedded: false });
    expect(impossible).toMatch(/DATABASE_URL is set.*cannot restart a server it does not run/);
    expect(problemsIn({ ...clean, postgresRestarts: 0, postgresRestartsImpossible: impossible })).toEqual([
      expect.stringMatching(/restarted 0 time\(s\) mid-run, not the 2 asked for: DATABASE_URL is set/),
    ]);
  });

  it('accepts no restarts only when none were asked for', () => {
    expect(restartsImpossibleOn({ embedded: true })).toBeNull();
    expect(problemsIn({ ...clean, postgresRestarts: 0, postgresRestartsWanted: 0 })).toEqual([]);
  });
});

describe('the chaos report and second calls', () => {
  it('fails a run that sent a key twice for an activity type without vendorDedup, though the vendor acted once', () => {
    expect(problemsIn({ ...clean, keysSentTwice: [{ key: 'k1', route: 'POST /v1/charges', requests: 2 }] })).toEqual([
      'key k1 was sent to POST /v1/charges 2 times, though its activity type is not vendorDedup',
    ]);
  });
});
