/**
 * The alert rules shipped in docs/alerts.rules.yml: valid, and firing when they should on series
 * shaped like the worker's (test/deploy/alerts.promtool.yml, run by `promtool test rules`).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { RULES_FILE, available, metricNamesIn } from '../support/prometheus.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe.skipIf(!available('promtool'))('the alert rules', () => {
  it('are valid rules', () => {
    expect(execFileSync('promtool', ['check', 'rules', RULES_FILE], { cwd: ROOT, encoding: 'utf8' })).toMatch(/SUCCESS: \d+ rules found/);
  });

  it('fire, and stay quiet, as their promtool tests say', () => {
    expect(execFileSync('promtool', ['test', 'rules', 'alerts.promtool.yml'], { cwd: `${ROOT}test/deploy`, encoding: 'utf8' })).toMatch(/SUCCESS/);
  });

  it('cover every alert docs/operations.md recommends that a metric can carry', () => {
    const rules = readFileSync(`${ROOT}${RULES_FILE}`, 'utf8');
    for (const type of ['IdempotencyOrphanedClaim', 'IdempotencyRecordRejected', 'IdempotencyRecordUnverifiable', 'IdempotencyConfiguration', 'IdempotencyKeyReuse', 'IdempotencyInvalidKeyInput', 'IdempotencyResultUndecodable', 'IdempotencyStoreUnavailable', 'IdempotencyClaimBusy']) {
      expect(rules, type).toContain(type);
    }
    expect(metricNamesIn(rules)).toEqual(['idempotency_lease_renewal_errors', 'idempotency_refusals']);
  });
});
