/**
 * The partitions: one worker cut off from one service (its own proxy in front of it) while its calls
 * are in flight, held past the claim's lease, then healed. The worker process itself stays alive.
 */
export interface PartitionKind {
  /** As `--kinds` names it. */
  readonly id: string;
  /** As the table prints it. */
  readonly name: string;
  /** The connection taken away. */
  readonly service: 'postgres' | 'temporal';
  /**
   * `hold`: connections stay open and carry nothing until the heal delivers it all, in order (TCP
   * retransmitting across a partition shorter than its timeout): a write sent meanwhile lands late.
   * `stall`: the same, but what was sent meanwhile is lost (a half-open link, as after a failover).
   * `cut`: connections dropped, and new ones refused until the heal.
   */
  readonly how: 'hold' | 'stall' | 'cut';
}

/**
 * Cut off from Postgres, the worker cannot renew its lease: another worker takes its claims over,
 * and what it writes after the heal must be refused by its token. Cut off from Temporal, it still
 * renews: the retry on another worker waits on it, and its record, written late, is the one that counts.
 */
export const PARTITION_KINDS: readonly PartitionKind[] = [
  { id: 'postgres-held', name: 'Postgres held', service: 'postgres', how: 'hold' },
  { id: 'postgres-stalled', name: 'Postgres stalled', service: 'postgres', how: 'stall' },
  { id: 'postgres-cut', name: 'Postgres cut', service: 'postgres', how: 'cut' },
  { id: 'temporal-held', name: 'Temporal held', service: 'temporal', how: 'hold' },
  { id: 'temporal-stalled', name: 'Temporal stalled', service: 'temporal', how: 'stall' },
  { id: 'temporal-cut', name: 'Temporal cut', service: 'temporal', how: 'cut' },
];
