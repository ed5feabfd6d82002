/** The horizon `prune` chooses, from what Temporal said and what the operator gave: no services needed. */
import { describe, expect, it } from 'vitest';
import { choosePruneHorizon } from '../../src/cli/prune-horizon.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const retention = (entries: Array<[string, number]>) => ({ byNamespace: new Map(entries) });

describe('choosePruneHorizon', () => {
  it('defaults to the longest retention among the namespaces, naming it', () => {
    expect(choosePruneHorizon({ force: false }, retention([['payments', 7 * DAY], ['sms', 2 * DAY]]))).toEqual({
      ms: 7 * DAY,
      from: 'namespace retention (payments)',
    });
  });

  it('defaults to the vendor key window when it is longer, and to an hour when nothing is longer', () => {
    expect(choosePruneHorizon({ force: false, vendorKeyWindowMs: 3 * DAY }, retention([['default', DAY]]))).toEqual({
      ms: 3 * DAY,
      from: '--vendor-key-window',
    });
    expect(choosePruneHorizon({ force: false }, retention([]))).toEqual({ ms: HOUR, from: 'the one-hour minimum' });
  });

  it('refuses a given horizon under the longest retention, naming that namespace, unless forced', () => {
    const read = retention([['sms', 2 * DAY], ['payments', 7 * DAY]]);
    expect(() => choosePruneHorizon({ force: false, olderThanMs: 3 * DAY }, read)).toThrow(
      /--older-than 3d is shorter than the retention of namespace payments \(7d\)/,
    );
    expect(choosePruneHorizon({ force: true, olderThanMs: 3 * DAY }, read)).toEqual({ ms: 3 * DAY, from: '--older-than' });
  });

  it('takes a given horizon without Temporal, and refuses to choose one', () => {
    expect(choosePruneHorizon({ force: false, olderThanMs: 9 * DAY }, { unavailable: 'down' })).toEqual({ ms: 9 * DAY, from: '--older-than' });
    expect(() => choosePruneHorizon({ force: false }, { unavailable: 'down' })).toThrow(/Temporal cannot be asked \(down\).*will not guess/);
  });
});
