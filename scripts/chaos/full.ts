/**
 * `npm run chaos:full`: the whole matrix, one after another (each takes the machine): the chaos run,
 * a kill at every crash point, the partitions, and the real Postgres failover. Each prints its own
 * seed and table; then one line per run. Exits 1 when any of them failed, after running them all.
 */
import { spawnSync } from 'node:child_process';
import { matrixSummary } from './matrix.js';
import type { MatrixResult } from './matrix.js';

const MATRIX: readonly (readonly string[])[] = [
  ['run', 'chaos'],
  ['run', 'chaos', '--', '--crash-points'],
  ['run', 'chaos', '--', '--partitions'],
  ['run', 'failover'],
];

const results: MatrixResult[] = [];
for (const args of MATRIX) {
  const command = `npm ${args.join(' ')}`;
  console.log(`\n=== ${command}\n`);
  const started = Date.now();
  const { status, signal } = spawnSync('npm', args, { stdio: 'inherit' });
  results.push({ command, exitCode: status ?? (signal ? `killed by ${signal}` : 'unknown'), seconds: (Date.now() - started) / 1000 });
}
const summary = matrixSummary(results);
console.log(`\n${summary.lines.join('\n')}`);
process.exit(summary.failed ? 1 : 0);
