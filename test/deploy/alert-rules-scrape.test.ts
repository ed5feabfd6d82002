/**
 * The alert rules name what the worker emits: a real Prometheus scrapes a worker's metrics (its
 * Runtime's exporter) with docs/alerts.rules.yml loaded, after the worker refused an orphaned call and
 * failed to renew a lease, and has a series for every metric name the rules select on. A rule with a
 * misspelled name would select nothing, for ever: that is what this catches.
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdempotencyOrphanedClaim, OutcomeUnknownError, idempotencyInterceptors } from '../../src/index.js';
import type { ClaimStore } from '../../src/index.js';
import { activityFailureOf } from '../support/failures.js';
import { RULES_FILE, available, metricNamesIn, startPrometheus } from '../support/prometheus.js';
import type { PrometheusServer } from '../support/prometheus.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();

/** The store, but every lease renewal fails (as against a Postgres that is down for renewals only). */
function failingRenewals(store: ClaimStore): ClaimStore {
  return new Proxy(store, {
    get(target, property) {
      if (property === 'renewLeases') return async () => Promise.reject(new Error('renewals refused for this test'));
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

describe.skipIf(!available('prometheus'))('the alert rules, against what a worker emits', () => {
  let prometheus: PrometheusServer;
  beforeAll(async () => {
    const target = new URL(process.env['TEST_PROMETHEUS_URL']!).host;
    prometheus = await startPrometheus(target, `${ROOT}${RULES_FILE}`);
  });
  afterAll(() => prometheus?.stop());

  it('select series Prometheus scraped, for every metric name in them', async () => {
    const taskQueue = uniqueName('tq');
    const activities = {
      // Outlives a renewal interval (a third of the lease), whose renewal fails.
      slowWrite: async () => {
        await sleep(1_500);
        return 'written';
      },
      // Its outcome unknown on the first attempt: the retry is refused as an orphan.
      lostCall: async () => {
        throw new OutcomeUnknownError('the line dropped after dialling');
      },
    };
    const interceptors = { activity: idempotencyInterceptors({ store: failingRenewals(schema.store), leaseMs: 1_000 }) };
    await temporal.withWorker({ taskQueue, activities, interceptors }, async () => {
      const start = (activity: string) =>
        temporal.client.workflow.start('callActivity', { taskQueue, workflowId: uniqueName('wf'), args: [{ activity, args: [] }] });
      const slow = await start('slowWrite');
      const lost = await start('lostCall');
      await slow.result();
      expect((await activityFailureOf(lost.result())).type).toBe(IdempotencyOrphanedClaim);
    });

    const names = metricNamesIn(readFileSync(`${ROOT}${RULES_FILE}`, 'utf8'));
    expect(names.length).toBeGreaterThan(0);
    const missing = async () => {
      const present = await prometheus.query('count by (__name__) ({__name__=~"idempotency_.*"})');
      const scraped = new Set(present.map((sample) => sample.metric['__name__']));
      return names.filter((name) => !scraped.has(name));
    };
    await expect.poll(missing, { timeout: 20_000, interval: 500 }).toEqual([]);
    // The refusal's own series carries the labels the rules group by.
    const [orphaned] = await prometheus.query(`idempotency_refusals{type="${IdempotencyOrphanedClaim}",taskQueue="${taskQueue}"}`);
    expect(orphaned?.metric).toMatchObject({ namespace: 'default', taskQueue, activityType: 'lostCall' });
    // And a misspelled name is told apart: nothing has been scraped under it.
    expect(await prometheus.query('count({__name__="idempotency_refusal"})')).toEqual([]);
  });
});
