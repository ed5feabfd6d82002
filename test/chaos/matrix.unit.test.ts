/** `npm run chaos:full` fails when any run of the matrix failed, and says which. No services. */
import { describe, expect, it } from 'vitest';
import { matrixSummary } from '../../scripts/chaos/matrix.js';

describe('the chaos matrix summary', () => {
  it('passes when every run passed, one line each', () => {
    const summary = matrixSummary([
      { command: 'npm run chaos', exitCode: 0, seconds: 301.4 },
      { command: 'npm run failover', exitCode: 0, seconds: 64 },
    ]);
    expect(summary).toEqual({ lines: ['npm run chaos     passed  301 s', 'npm run failover  passed  64 s'], failed: false });
  });

  it('fails when any run exited otherwise, or was killed, naming it', () => {
    const summary = matrixSummary([
      { command: 'npm run chaos -- --partitions', exitCode: 1, seconds: 90 },
      { command: 'npm run failover', exitCode: 'killed by SIGTERM', seconds: 3 },
      { command: 'npm run chaos', exitCode: 0, seconds: 300 },
    ]);
    expect(summary.failed).toBe(true);
    expect(summary.lines[0]).toBe('npm run chaos -- --partitions  FAILED (exit 1)  90 s');
    expect(summary.lines[1]).toBe('npm run failover               FAILED (exit killed by SIGTERM)  3 s');
  });
});
