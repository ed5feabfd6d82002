/**
 * Starts the longest test files first. Vitest does so from its cache of earlier runs, but a fresh
 * clone (CI, a new contributor) has none, and its fallback (largest file first) started two of the
 * longest files last: the run then waited on them alone, about a minute, with three workers idle.
 */
import { existsSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BaseSequencer } from 'vitest/node';
import type { TestSpecification } from 'vitest/node';

/** Files of 20 s and more, longest first, as measured on a 2-core machine (`npm test`, 2026-12-04). */
const LONGEST = [
  'test/worker/liveness.test.ts',
  'test/worker/reconcile.test.ts',
  'test/workflow/resumable.test.ts',
  'test/demo.test.ts',
  'test/deploy/runbook-demo.test.ts',
  'test/worker/edges.test.ts',
  'test/worker/ledger.test.ts',
  'test/cli/cli.test.ts',
  'test/store/record-secret-rotation.test.ts',
  'test/worker/hung-owner.test.ts',
  'test/deploy/roles.test.ts',
  'test/worker/trust.test.ts',
  'test/worker/attempts-end-on-a-silent-link.test.ts',
  'test/cli/prune-retention.test.ts',
  'test/worker/waiting-for-a-live-owner.unit.test.ts',
  'test/workflow/missing-interceptors.test.ts',
  'test/worker/interceptor.test.ts',
];

// A file renamed or deleted must leave this list too, or the order silently decays.
const root = fileURLToPath(new URL('../../', import.meta.url));
const missing = LONGEST.filter((file) => !existsSync(root + file));
if (missing.length > 0) throw new Error(`test/support/longest-first.ts lists files that do not exist: ${missing.join(', ')}`);

export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const at = LONGEST.indexOf(relative(spec.project.config.root, spec.moduleId));
      return at === -1 ? LONGEST.length : at;
    };
    // Stable: within a project the listed files go first, in the list's order; the rest keep vitest's.
    return sorted
      .map((spec, index) => ({ spec, index }))
      .sort((a, b) => a.spec.project.config.sequence.groupOrder - b.spec.project.config.sequence.groupOrder || rank(a.spec) - rank(b.spec) || a.index - b.index)
      .map(({ spec }) => spec);
  }
}
