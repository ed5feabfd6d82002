import { CliError, EXIT } from './errors.js';

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };
const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)$/;

/** A thousand years: far past any retention, well inside what a Postgres interval holds. */
const MAX_DURATION_MS = 1_000 * 365.25 * 86_400_000;

/** The range a flag's duration must fall in, when it is narrower than (0, a thousand years]. */
export interface DurationRange {
  readonly minMs?: number;
  readonly maxMs?: number;
}

/**
 * `7d`, `24h`, `90m`, `30s` → milliseconds, or a usage error naming the flag. A unit is required:
 * a bare `7` once meant seven milliseconds to `prune`, which deleted every completed claim.
 */
export function parseDuration(flag: string, text: string | undefined, range: DurationRange = {}): number | undefined {
  if (text === undefined) return undefined;
  const match = DURATION.exec(text.trim());
  const millis = match ? Number(match[1]) * UNIT_MS[match[2]!]! : NaN;
  if (!Number.isFinite(millis) || millis <= 0) {
    throw new CliError(
      `${flag} ${JSON.stringify(text)} is not a duration with a unit; use e.g. 30m, 24h, 7d or 2w (units: ms, s, m, h, d, w).`,
      EXIT.usage,
    );
  }
  const minMs = range.minMs ?? 0;
  const maxMs = Math.min(range.maxMs ?? MAX_DURATION_MS, MAX_DURATION_MS);
  if (millis < minMs || millis > maxMs) {
    throw new CliError(
      `${flag} ${JSON.stringify(text)} is out of range: use ${minMs > 0 ? `${durationText(minMs)} to ` : 'up to '}${durationText(maxMs)}.`,
      EXIT.usage,
    );
  }
  return millis;
}

/** `90000000` → `1d 1h`: how a duration is read back to the person who typed it. */
export function durationText(ms: number): string {
  const parts: string[] = [];
  let left = Math.round(ms);
  for (const [unit, size] of [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1_000]] as const) {
    if (left >= size) {
      parts.push(`${Math.floor(left / size)}${unit}`);
      left %= size;
    }
  }
  return parts.slice(0, 2).join(' ') || `${left}ms`;
}
