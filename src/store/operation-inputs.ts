/**
 * Checks for the numbers and flags ClaimOperations takes from library callers (the CLI parses
 * its own first). A bad one is refused by name before any statement runs: a negative horizon
 * would put the cutoff in the future and prune what was just recorded, a batch of 0 would end a
 * signing pass at once and let the switch go ahead over unsigned rows.
 */
import { IdempotencyConfigError, InvalidArgumentError } from '../errors.js';

/** A horizon in milliseconds: positive and finite. */
export function horizonMs(option: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new InvalidArgumentError(option, `ClaimOperations: ${option} must be a positive, finite number of milliseconds, got ${describe(value)}.`);
  }
  return value;
}

/** Rows per statement of a signing pass: a positive integer. */
export function batchSize(value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new IdempotencyConfigError({ option: 'batchSize', message: `ClaimOperations: batchSize must be a positive integer, got ${describe(value)}.` });
  }
  return value;
}

export function optionalBoolean(option: string, value: unknown): boolean | undefined {
  if (value !== undefined && typeof value !== 'boolean') {
    throw new IdempotencyConfigError({ option, message: `ClaimOperations: ${option} must be true or false, got ${describe(value)}.` });
  }
  return value;
}

function describe(value: unknown): string {
  return typeof value === 'number' || typeof value === 'boolean' || value === null ? String(value) : `a ${typeof value}`;
}
