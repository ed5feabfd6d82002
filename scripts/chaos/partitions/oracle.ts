/**
 * The verdict on one partition run: the crash-point oracle (double calls, lost actions, refusals,
 * workflows left open), and what became of the partitioned worker's claims: taken over while it was
 * cut off, and its late writes on them refused by their token, never taken over the new holder's.
 */
import { judge } from '../crash-points/oracle.js';
import type { RunVerdict } from '../crash-points/oracle.js';
import type { RunFacts } from '../crash-points/run-facts.js';

export interface PartitionFacts extends RunFacts {
  /**
   * The service the worker was cut off from. From Postgres, every write it makes on its claims is late
   * (after the heal); from Temporal it still writes on time, and may give a claim up itself (a call
   * the SDK timed out is marked unknown) before another worker takes it over: no late write to refuse.
   */
  readonly cutOffFrom: 'postgres' | 'temporal';
  /** The partitioned worker's claims when the partition began, each with its call in flight. */
  readonly heldKeys: readonly string[];
  /** Of those, the ones another worker held when the partition healed. */
  readonly takenOver: readonly string[];
  /** Keys whose write the partitioned worker logged as refused by its token. */
  readonly lateWritesRefused: readonly string[];
  /** Keys whose late write (kept in the background) the partitioned worker logged as taken. */
  readonly lateWritesTaken: readonly string[];
  /** Keys whose lease renewal the partitioned worker logged as refused (its claim lost while its call ran). */
  readonly leasesLost: readonly string[];
}

export interface PartitionVerdict extends RunVerdict {
  readonly takenOver: number;
  /** Claims taken over whose late write (a settling write, or a lease renewal) was refused by its token and logged. */
  readonly lateRefused: number;
  /** Claims taken over on which a late write was taken anyway: obeyed over the new holder. */
  readonly lateObeyed: number;
  /**
   * Claims taken over from a worker cut off from Postgres whose settling write never ended: its lease renewal
   * was refused and logged, but the write (or what the attempt awaits before it) hangs on a connection whose
   * bytes the partition lost. Nothing is obeyed; nothing more is said. A failure: every statement is bounded.
   */
  readonly lateHung: number;
  /** Claims taken over from a worker cut off from Postgres, on which it never said a late write was refused. */
  readonly lateUnheard: number;
}

export function judgePartition(facts: PartitionFacts): PartitionVerdict {
  const refused = new Set(facts.lateWritesRefused);
  const taken = new Set(facts.lateWritesTaken);
  const lost = new Set(facts.leasesLost);
  const owed = facts.cutOffFrom === 'postgres' ? facts.takenOver.filter((key) => !refused.has(key) && !taken.has(key)) : [];
  return {
    ...judge(facts),
    takenOver: facts.takenOver.length,
    lateRefused: facts.takenOver.filter((key) => (refused.has(key) || lost.has(key)) && !taken.has(key)).length,
    lateObeyed: facts.takenOver.filter((key) => taken.has(key)).length,
    lateHung: owed.filter((key) => lost.has(key)).length,
    lateUnheard: owed.filter((key) => !lost.has(key)).length,
  };
}
