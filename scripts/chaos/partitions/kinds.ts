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
  /** `stall`: connections stay open and carry nothing, as a half-open link; `cut`: dropped, and new ones refused. */
  readonly how: 'stall' | 'cut';
}

/**
 * Cut off from Postgres, the worker cannot renew its lease: another worker takes its claims over,
 * and what it writes after the heal must be refused by its token. Cut off from Temporal, it still
 * renews: the retry on another worker waits on it, and its record, written late, is the one that counts.
 */
export const PARTITION_KINDS: readonly PartitionKind[] = [
  { id: 'postgres-stalled', name: 'Postgres stalled', service: 'postgres', how: 'stall' },
  { id: 'postgres-cut', name: 'Postgres cut', service: 'postgres', how: 'cut' },
  { id: 'temporal-stalled', name: 'Temporal stalled', service: 'temporal', how: 'stall' },
  { id: 'temporal-cut', name: 'Temporal cut', service: 'temporal', how: 'cut' },
];
