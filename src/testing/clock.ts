/**
 * The time an in-memory store keeps leases and deadlines by. Postgres keeps
 * them by the database's clock; a unit test keeps them by a clock it moves,
 * so it can make an owner look dead without sleeping.
 */
import { InvalidArgumentError } from '../errors.js';

export interface Clock {
  /** Milliseconds since the epoch, as `Date.now()`. */
  now(): number;
}

/** The process's own clock: leases lapse in real time. */
export const systemClock: Clock = { now: () => Date.now() };

/** A clock that moves only when the test says so. */
export class ManualClock implements Clock {
  private current: number;

  /** Starts at `start` (default: the real time now). */
  constructor(start: number | Date = Date.now()) {
    this.current = millisecondsOf('start', start);
  }

  now(): number {
    return this.current;
  }

  /** Moves time forward by `ms`: leases and deadlines that end meanwhile have ended. */
  advance(ms: number): void {
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
      throw new InvalidArgumentError('ms', `ManualClock.advance(ms) needs a finite number of milliseconds, 0 or more; got ${String(ms)}.`);
    }
    this.current += ms;
  }
}

function millisecondsOf(name: string, value: number | Date): number {
  const ms = value instanceof Date ? value.getTime() : value;
  if (typeof ms !== 'number' || !Number.isFinite(ms)) {
    throw new InvalidArgumentError(name, `ManualClock: ${name} must be a Date or milliseconds since the epoch; got ${String(value)}.`);
  }
  return ms;
}
