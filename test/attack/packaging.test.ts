/**
 * Attack: the README's registration code, copied as is, and the fixes the library's own
 * messages recommend.
 */
import { mkdtemp, mkdir, symlink } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as library from '../../src/index.js';
import { WORKFLOW_INTERCEPTORS_MISSING } from '../../src/workflow/resumable.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe("the README's registration code", () => {
  it("require.resolve('temporal-idempotency/workflow-interceptors') resolves in a user's project", async () => {
    // A user's project with the package installed (as a link to this checkout).
    const project = await mkdtemp(join(tmpdir(), 'ti-user-'));
    await mkdir(join(project, 'node_modules'));
    await symlink(ROOT, join(project, 'node_modules', 'temporal-idempotency'));
    const userRequire = createRequire(join(project, 'worker.js'));
    let code: string | undefined;
    try {
      userRequire.resolve('temporal-idempotency/workflow-interceptors');
    } catch (error) {
      code = (error as { code?: string }).code;
    }
    // MODULE_NOT_FOUND would only mean this checkout is not built; the exports map must allow the path.
    // Fails today: ERR_PACKAGE_PATH_NOT_EXPORTED (the exports map has only an "import" condition).
    expect(code).not.toBe('ERR_PACKAGE_PATH_NOT_EXPORTED');
  });
});

describe('the fixes the messages recommend exist', () => {
  it('IdempotencyPlugin, recommended by the missing-interceptors and registered-twice messages, is exported', () => {
    expect(WORKFLOW_INTERCEPTORS_MISSING).toContain('IdempotencyPlugin');
    // Fails today: there is no IdempotencyPlugin anywhere in the library.
    expect(library).toHaveProperty('IdempotencyPlugin');
  });
});
