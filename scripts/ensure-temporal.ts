/**
 * `npm run temporal:ensure`: finds or builds the Temporal CLI (see dev/temporal-cli.ts)
 * and prints its path, so CI pays for the one-time Go build in a step of its own.
 */
import { findTemporalCli } from '../dev/temporal-cli.js';

const started = Date.now();
const path = await findTemporalCli((line) => console.log(line));
if (path) {
  console.log(`Temporal CLI: ${path} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
} else {
  console.log('No Temporal CLI and no Go toolchain: the tests will let @temporalio/testing download the dev server.');
}
