/**
 * How src's modules import each other, checked by dependency-cruiser (.dependency-cruiser.json): no
 * import circle, type imports included (found in review: worker/call-settlement.ts and
 * worker/interceptor.ts imported each other), and src/key free of Temporal and Postgres.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe("src's imports", () => {
  it('form no circle, and keep src/key free of Temporal and Postgres', () => {
    const run = () =>
      execFileSync(process.execPath, ['node_modules/dependency-cruiser/bin/dependency-cruise.mjs', '--config', '.dependency-cruiser.json', '--output-type', 'err', 'src'], {
        cwd: ROOT,
        encoding: 'utf8',
      });
    expect(run).not.toThrow();
  }, 60_000);
});
