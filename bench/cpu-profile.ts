/**
 * `npm run bench -- --profile`: a CPU profile of this process (the worker) during
 * each measured 50-in-flight run, without and with the interceptor, and the
 * difference in self time per activity by place: which functions of ours, of
 * `pg`, of the SDK the interceptor makes the worker spend its time in. The
 * same places run in both modes (the SDK's own work), so only the difference
 * says what the interceptor costs. The raw profiles go to the temporary
 * directory, for Chrome's DevTools.
 */
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import type { Profiler } from 'node:inspector';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Self time per place, in ms per activity, and where the raw profile was written. */
export interface CpuProfile {
  readonly file: string;
  readonly msPerActivity: ReadonlyMap<string, number>;
}

export async function profiled<T>(label: string, activities: number, run: () => Promise<T>): Promise<{ result: T; profile: CpuProfile }> {
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    // 100 µs: fine enough for functions that take a few µs per call over thousands of calls.
    await session.post('Profiler.setSamplingInterval', { interval: 100 });
    await session.post('Profiler.start');
    const result = await run();
    const { profile } = await session.post('Profiler.stop');
    const file = join(tmpdir(), `temporal-idempotency-bench-${label}.cpuprofile`);
    await writeFile(file, JSON.stringify(profile));
    return { result, profile: { file, msPerActivity: selfTimeByPlace(profile, activities) } };
  } finally {
    session.disconnect();
  }
}

/** A place: `src/worker/interceptor.ts runClaimed`, a package (`pg`), a Node module, or V8's own (`(garbage collector)`). */
function selfTimeByPlace(profile: Profiler.Profile, activities: number): Map<string, number> {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const places = new Map<string, number>();
  const deltas = profile.timeDeltas ?? [];
  (profile.samples ?? []).forEach((id, index) => {
    const frame = nodes.get(id)!.callFrame;
    const place = placeOf(frame.url, frame.functionName);
    if (place === '(idle)') return;
    places.set(place, (places.get(place) ?? 0) + (deltas[index] ?? 0) / 1_000 / activities);
  });
  return places;
}

function placeOf(url: string, functionName: string): string {
  const packageName = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
  if (packageName) return packageName;
  const path = url.startsWith('file://') ? fileURLToPath(url) : url;
  if (path.startsWith(ROOT)) return `${path.slice(ROOT.length)} ${functionName || '(anonymous)'}`;
  return path === '' ? `(${functionName || 'native'})` : path;
}

/** The places whose self time grew most with the interceptor, per activity. */
export function printProfileDifference(without: CpuProfile, withIdempotency: CpuProfile, rows = 25): void {
  const places = new Set([...without.msPerActivity.keys(), ...withIdempotency.msPerActivity.keys()]);
  const added = [...places].map((place) => ({
    place,
    without: without.msPerActivity.get(place) ?? 0,
    with: withIdempotency.msPerActivity.get(place) ?? 0,
  }));
  const total = (profile: CpuProfile) => [...profile.msPerActivity.values()].reduce((sum, ms) => sum + ms, 0);
  console.log(
    `\nCPU profile of the worker process, 50 in flight: ${total(without).toFixed(3)} ms/activity without, ` +
      `${total(withIdempotency).toFixed(3)} with (self time, idle excluded). Raw: ${without.file}, ${withIdempotency.file}`,
  );
  console.log('added ms/activity  without  with    place');
  for (const row of added.sort((a, b) => b.with - b.without - (a.with - a.without)).slice(0, rows)) {
    console.log(`${(row.with - row.without).toFixed(3).padStart(17)}  ${row.without.toFixed(3).padStart(7)}  ${row.with.toFixed(3).padStart(6)}  ${row.place}`);
  }
}
