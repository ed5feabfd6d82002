/**
 * A closed loop: `clients` callers each run `cycle` back to back until the
 * time is up. Throughput is finished cycles over the time they actually took.
 */
import { performance } from 'node:perf_hooks';

export async function cyclesPerSecond(clients: number, seconds: number, cycle: () => Promise<void>): Promise<number> {
  const started = performance.now();
  const deadline = started + seconds * 1_000;
  let finished = 0;
  const client = async () => {
    while (performance.now() < deadline) {
      await cycle();
      finished++;
    }
  };
  await Promise.all(Array.from({ length: clients }, client));
  return finished / ((performance.now() - started) / 1_000);
}
