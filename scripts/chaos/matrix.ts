/** The summary `npm run chaos:full` prints after the whole matrix: one line per run, and whether any failed. */

export interface MatrixResult {
  readonly command: string;
  /** The exit code, or how the process ended without one. */
  readonly exitCode: number | string;
  readonly seconds: number;
}

export function matrixSummary(results: readonly MatrixResult[]): { readonly lines: string[]; readonly failed: boolean } {
  const width = Math.max(...results.map((result) => result.command.length));
  const lines = results.map(
    (result) => `${result.command.padEnd(width)}  ${result.exitCode === 0 ? 'passed' : `FAILED (exit ${result.exitCode})`}  ${result.seconds.toFixed(0)} s`,
  );
  return { lines, failed: results.some((result) => result.exitCode !== 0) };
}
