/** Small numeric helpers for the benchmark: percentiles, means, formatting. */

/** Nearest-rank percentile (p in 0..100) of unsorted samples; NaN when there are none. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

export function mean(samples: readonly number[]): number {
  if (samples.length === 0) return Number.NaN;
  return samples.reduce((sum, value) => sum + value, 0) / samples.length;
}

/** Rounds for the JSON line, so it stays readable without pretending to more precision than we have. */
export function round(value: number, digits = 2): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

export function fixed(value: number, digits = 0): string {
  return Number.isFinite(value) ? value.toFixed(digits) : 'n/a';
}
