/** Prints the results: tables for people, then one JSON line with every figure for machines. */
import type { BenchOptions } from './options.js';
import { fixed, round } from './stats.js';
import type { StoreResults } from './store-bench.js';
import type { PacedBaseline } from './paced-baseline.js';
import { TARGETS } from './summary.js';
import type { InterceptorSummary, ModeSummary } from './summary.js';

export function printStore(store: StoreResults): void {
  console.log('\nStore: claim + complete cycles per second (INSERT ... ON CONFLICT DO NOTHING RETURNING, then the settle UPDATE)');
  printTable(
    [
      'clients',
      'store/s',
      'unbatched/s',
      'baseline/s',
      'store/baseline',
      `target >= ${TARGETS.storeRatio}x`,
      'store/unbatched',
      'per round',
      `target >= ${TARGETS.batchingRatio}x`,
      'pgbench/s',
      'pgbench pg CPU ms/cycle',
    ],
    store.rows.map((row) => [
      String(row.clients),
      fixed(row.storePerSecond),
      fixed(row.unbatchedPerSecond),
      fixed(row.baselinePerSecond),
      `${fixed(row.ratio, 2)}x`,
      row.clients < 8 ? '-' : mark(row.ratio >= TARGETS.storeRatio),
      `${fixed(row.batchingRatio, 2)}x`,
      spread(roundRatios(row.storeRounds, row.unbatchedRounds)),
      row.batchingRatio >= TARGETS.batchingRatio ? mark(true) : Math.max(...roundRatios(row.storeRounds, row.unbatchedRounds)) >= TARGETS.batchingRatio ? 'within spread' : mark(false),
      row.pgbench === null ? 'skipped' : fixed(row.pgbench.perSecond),
      row.pgbench?.postgresCpuMsPerCycle == null ? '-' : fixed(row.pgbench.postgresCpuMsPerCycle, 3),
    ]),
  );
  if (store.pgbenchSkipped) console.log(`pgbench skipped: ${store.pgbenchSkipped}`);
}

/** store / unbatched in each round: both ran in the same round, so drift between rounds cancels. */
function roundRatios(store: readonly number[], unbatched: readonly number[]): number[] {
  return store.map((perSecond, round) => perSecond / unbatched[round]!);
}

function spread(ratios: readonly number[]): string {
  return ratios.length < 2 ? '-' : `${fixed(Math.min(...ratios), 2)}-${fixed(Math.max(...ratios), 2)}x`;
}

/** The floor the one-in-flight p50 is held to; the reference for Postgres CPU, from pgbench. */
export interface Floors {
  readonly paced: PacedBaseline | null;
  /** Postgres CPU per claim+record cycle under pgbench, at the client count named. */
  readonly pgbenchCpu: { readonly clients: number; readonly msPerCycle: number } | null;
}

/**
 * `targets`: 'loaded' for the 50-in-flight run (throughput, statements, Postgres CPU against pgbench's),
 * 'one' for the one-in-flight run (added p50 against the paced floor).
 */
export function printInterceptor(summary: InterceptorSummary, targets: 'loaded' | 'one', floors: Floors): void {
  console.log(`\nInterceptor: ${summary.activitiesPerRun} activities per run, ${summary.inFlight} in flight; order ${summary.order}`);
  const target = (kind: 'loaded' | 'one', text: string, met: boolean) => (targets === kind ? `${text} ${mark(met)}` : '');
  const both = (pick: (mode: ModeSummary) => string) => [pick(summary.without), pick(summary.with)];
  const cpu = (mode: ModeSummary) => mode.cpuMsPerActivity;
  const addedPostgres = cpu(summary.with).postgres - cpu(summary.without).postgres;
  const floor = floors.paced ? floors.paced.p50Ms + TARGETS.addedP50OverFloorMs : null;
  printTable(
    ['', 'without', 'with', 'with vs without', 'target'],
    [
      ['activities/s', ...both((mode) => fixed(mode.activitiesPerSecond)), `${fixed(summary.throughputRatio, 3)}x`,
        target('loaded', `>= ${TARGETS.throughputRatio}x`, summary.throughputRatio >= TARGETS.throughputRatio)],
      ['  each round', ...both((mode) => mode.perRound.map((value) => fixed(value)).join(' / ')), '', ''],
      ['p50 ms in interceptor', ...both((mode) => fixed(mode.p50Ms, 2)), `+${fixed(summary.addedP50Ms, 2)} ms`,
        floor === null ? '' : target('one', `<= ${fixed(floor, 2)} ms`, summary.addedP50Ms <= floor)],
      ['p99 ms in interceptor', ...both((mode) => fixed(mode.p99Ms, 2)), `+${fixed(summary.addedP99Ms, 2)} ms`, ''],
      ['CPU ms/activity: node', ...both((mode) => fixed(cpu(mode).node, 2)), delta(summary, (mode) => cpu(mode).node), ''],
      ['  postgres', ...both((mode) => fixed(cpu(mode).postgres, 2)), delta(summary, (mode) => cpu(mode).postgres),
        floors.pgbenchCpu === null
          ? ''
          : target('loaded', `<= ${fixed(floors.pgbenchCpu.msPerCycle, 2)} (pgbench, ${floors.pgbenchCpu.clients} clients)`, addedPostgres <= floors.pgbenchCpu.msPerCycle)],
      ['  temporal server', ...both((mode) => fixed(cpu(mode).temporal, 2)), delta(summary, (mode) => cpu(mode).temporal), ''],
      ['  rest of machine', ...both((mode) => fixed(cpu(mode).other, 2)), delta(summary, (mode) => cpu(mode).other), ''],
      ['machine busy (2 cores)', ...both((mode) => `${fixed(mode.machineBusy * 100)}%`), '', ''],
      ['event-loop delay p50/p99 ms', ...both((mode) => `${fixed(mode.eventLoopDelayP50Ms, 1)} / ${fixed(mode.eventLoopDelayP99Ms, 1)}`), '', ''],
    ],
  );
  const statementsTarget = target('loaded', ` (target <= ${TARGETS.statementsPerActivity}:`, summary.statementsPerActivity <= TARGETS.statementsPerActivity);
  console.log(
    `Postgres per activity (with): ${fixed(summary.statementsPerActivity, 3)} statements${statementsTarget ? `${statementsTarget})` : ''}, ` +
      `${fixed(summary.commitsPerActivity, 3)} commits, ` +
      `${fixed(summary.walSyncsPerActivity, 3)} WAL syncs, ${fixed(summary.walBytesPerActivity)} WAL bytes; ` +
      `${fixed(summary.queuedForConnectionShare * 100, 1)}% of statements found no free pool connection`,
  );
  if (targets === 'one' && floors.paced) {
    console.log(
      `Floor: the store's claim and record sent straight through pg.Pool, one at a time every ${fixed(floors.paced.intervalMs)} ms: ` +
        `p50 ${fixed(floors.paced.p50Ms, 2)} ms, p99 ${fixed(floors.paced.p99Ms, 2)} ms (${floors.paced.cycles} cycles); ` +
        `the added p50 may be ${TARGETS.addedP50OverFloorMs} ms more`,
    );
  }
  for (const [kind, ms] of Object.entries(summary.statementMs)) {
    console.log(`  ${kind.padEnd(7)} ${String(ms.count).padStart(6)} statements, p50 ${fixed(ms.p50, 2)} ms, p99 ${fixed(ms.p99, 2)} ms (sent to resolved, seen from Node)`);
  }
}

export function printJson(options: BenchOptions, settings: Record<string, string>, figures: Record<string, unknown>): void {
  const all = { mode: options.quick ? 'quick' : 'full', postgres: settings, ...figures };
  // Three decimals are more than the noise on a shared machine allows; more would only look precise.
  console.log(JSON.stringify(all, (_, value: unknown) => (typeof value === 'number' ? round(value, 3) : value)));
}

function delta(summary: InterceptorSummary, pick: (mode: ModeSummary) => number): string {
  const difference = pick(summary.with) - pick(summary.without);
  return `${difference >= 0 ? '+' : ''}${fixed(difference, 2)}`;
}

function mark(met: boolean): string {
  return met ? 'met' : 'MISSED';
}

function printTable(header: readonly string[], rows: readonly (readonly string[])[]): void {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]?.length ?? 0)));
  const line = (cells: readonly string[]) => cells.map((cell, column) => cell.padEnd(widths[column]!)).join('  ').trimEnd();
  console.log(line(header));
  console.log(line(widths.map((width) => '-'.repeat(width))));
  for (const row of rows) console.log(line(row));
}
