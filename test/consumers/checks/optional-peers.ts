/**
 * The optional peers a fixture does not list must be absent from it, so that
 * the steps after this one prove the library loads, typechecks and runs
 * without them (`@opentelemetry/api`: tracing is skipped, nothing fails).
 */
import { access } from 'node:fs/promises';
import { join } from 'node:path';

export const UNLISTED_OPTIONAL_PEERS = ['@opentelemetry/api'] as const;

export async function assertNotInstalled(fixtureDir: string, names: readonly string[]): Promise<void> {
  for (const name of names) {
    // The library resolves it from its own folder upwards: these are the places it would be found.
    for (const dir of [join(fixtureDir, 'node_modules', 'temporal-idempotency', 'node_modules', name), join(fixtureDir, 'node_modules', name)]) {
      const found = await access(dir).then(() => true, () => false);
      if (found) throw new Error(`${name} is installed (${dir}) though the fixture does not list it: something now brings it in.`);
    }
  }
}
