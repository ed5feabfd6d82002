/**
 * The partition itself, once the victim's calls are in flight: its proxy held, stalled or cut; a
 * second worker started; held until the lease could have lapsed and the retry reached that worker;
 * then healed. The vendor's held answers go out during the partition or after the heal, as drawn.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { WorkflowHandle } from '@temporalio/client';
import type { FakeVendor } from '../../../activities/fake-vendor.js';
import type { ProxiedWorker } from '../crash-points/proxied-worker.js';
import type { RunObservations } from '../crash-points/run-observations.js';
import { between } from '../../../dev/seeded-random.js';
import type { Random } from '../../../dev/seeded-random.js';
import type { PartitionKind } from './kinds.js';
import { untilRetriedElsewhere } from './partition-moments.js';

export interface PartitionContext {
  readonly victim: ProxiedWorker;
  /** The victim's claims, each with its call in flight (the vendor acted and holds the answer). */
  readonly heldKeys: readonly string[];
  readonly vendor: FakeVendor;
  readonly handle: WorkflowHandle;
  readonly observations: RunObservations;
  readonly random: Random;
  /** Aborted when the run stops waiting for the partition's moment. */
  readonly signal: AbortSignal;
  /** The claim's lease: the partition outlasts twice this. */
  readonly leaseMs: number;
  spawnWorker(): Promise<ProxiedWorker>;
}

export interface Partitioned {
  /** The moment came: the claims taken over (cut off from Postgres), or the call retried elsewhere (from Temporal). */
  readonly reached: boolean;
  /** The victim's claims another worker held when the partition healed. */
  readonly takenOver: readonly string[];
  readonly note: string;
}

export async function partitionAndHeal(kind: PartitionKind, context: PartitionContext): Promise<Partitioned> {
  const { victim, vendor, random } = context;
  const proxy = kind.service === 'postgres' ? victim.postgres : victim.temporal;
  // The answers reach the worker soon after the partition began (it has a result to record while cut off),
  // or only after the heal (by then the SDK has timed its call out: an outcome it must mark unknown).
  const answersEarly = random() < 0.5;
  const answersAfterMs = between(random, 0, 1_500);
  const partitioned = Date.now();
  ({ hold: () => proxy.hold(), stall: () => proxy.stall(), cut: () => proxy.cut() })[kind.how]();
  const answered = answersEarly ? sleep(answersAfterMs).then(() => vendor.releaseAnswers()) : undefined;
  await context.spawnWorker();
  const reached = await theMoment(kind, context);
  await answered;
  await sleep(Math.max(0, 2 * context.leaseMs - (Date.now() - partitioned)) + between(random, 0, 1_000));
  const takenOver = (await context.observations.claims())
    .filter((claim) => context.heldKeys.includes(claim.key) && claim.claimedBy !== victim.name)
    .map((claim) => claim.key);
  const note = `${context.heldKeys.length} claim(s) held, partitioned ${((Date.now() - partitioned) / 1000).toFixed(1)} s, ${answersEarly ? `answers ${answersAfterMs} ms into it` : 'answers after the heal'}`;
  proxy.heal();
  if (!answersEarly) {
    await sleep(500);
    vendor.releaseAnswers();
  }
  return { reached, takenOver, note };
}

/**
 * Cut off from Postgres, the victim's leases lapse and the other worker takes every claim over; cut off
 * from Temporal, it still renews, and the retry that reaches the other worker waits on it or answers from its record.
 */
function theMoment(kind: PartitionKind, { victim, heldKeys, observations, handle, signal }: PartitionContext): Promise<boolean> {
  if (kind.service === 'temporal') return untilRetriedElsewhere(handle, victim.process.pid, signal);
  return observations.untilClaims((claims) => heldKeys.every((key) => claims.some((claim) => claim.key === key && claim.claimedBy !== victim.name)), signal);
}
