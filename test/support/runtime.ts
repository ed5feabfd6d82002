/**
 * The Temporal Runtime of each test process: SDK info logs (worker state
 * changes, the failures tests provoke on purpose) kept out of the output, and
 * metrics served on a Prometheus endpoint so tests can read what was emitted.
 * Warnings and errors are also kept in memory (`loggedLines`), so a test can
 * check what a worker told its operator.
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import type { LogEntry } from '@temporalio/worker';
import { freePort } from '../../dev/free-port.js';

const logged: LogEntry[] = [];
(globalThis as { __idempotencyTestLogs?: LogEntry[] }).__idempotencyTestLogs = logged;
const printErrors = new DefaultLogger('ERROR');

const port = await freePort();
Runtime.install({
  logger: new DefaultLogger('WARN', (entry) => {
    logged.push(entry);
    if (entry.level === 'ERROR') printErrors.log(entry.level, entry.message, entry.meta);
  }),
  telemetryOptions: { metrics: { prometheus: { bindAddress: `127.0.0.1:${port}` } } },
});
process.env['TEST_PROMETHEUS_URL'] = `http://127.0.0.1:${port}/metrics`;
