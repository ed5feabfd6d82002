/**
 * Keeps the Temporal SDK's info logs (worker state changes, every activity
 * failure the tests provoke on purpose) out of the test output.
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';

Runtime.install({ logger: new DefaultLogger('ERROR') });
