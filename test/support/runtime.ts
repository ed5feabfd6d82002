/**
 * The Temporal Runtime of each test process: SDK info logs (worker state
 * changes, the failures tests provoke on purpose) kept out of the output, and
 * metrics served on a Prometheus endpoint so tests can read what was emitted.
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { freePort } from '../../dev/free-port.js';

const port = await freePort();
Runtime.install({
  logger: new DefaultLogger('ERROR'),
  telemetryOptions: { metrics: { prometheus: { bindAddress: `127.0.0.1:${port}` } } },
});
process.env['TEST_PROMETHEUS_URL'] = `http://127.0.0.1:${port}/metrics`;
