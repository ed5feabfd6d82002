/**
 * `prune` keeps what a reset can still ask for: its horizon comes from the
 * namespace's retention, read from the real dev server (a namespace registered
 * here with 3 days), never shorter unless forced; a claim whose workflow still
 * runs, or closed within the horizon, stays; the vendor's key window is a floor
 * --force does not lower; the ledger goes with its own horizon; and without
 * Temporal the CLI says so and wants the horizon given.
 */
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import type { Client } from '@temporalio/client';
import type { ClaimRequest } from '../../src/index.js';
import { EXIT } from '../../src/cli/errors.js';
import { claimRequest } from '../support/claims.js';
import { runCli } from '../support/cli.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const namespace = uniqueName('retention-3d');
const started: string[] = [];

/** Only these Temporal settings: none inherited from the machine, no config file. */
const temporalAt = (address: string) => ({
  TEMPORAL_ADDRESS: address,
  TEMPORAL_NAMESPACE: namespace,
  TEMPORAL_PROFILE: '',
  TEMPORAL_CONFIG_FILE: '',
  TEMPORAL_API_KEY: '',
  XDG_CONFIG_HOME: join(tmpdir(), `no-temporal-config-${randomUUID()}`),
});
const reachable = () => temporalAt(inject('temporalAddress'));
const unreachable = () => temporalAt('127.0.0.1:1');
const prune = (env: Record<string, string>, ...args: string[]) => runCli(['prune', ...args, '--schema', schema.name], env);

type RegisterNamespace = Parameters<Client['workflowService']['registerNamespace']>[0];
// protobufjs takes a number for an int64; its types name only Long, a package this project does not depend on.
const threeDays = { seconds: 3 * 86_400 } as unknown as RegisterNamespace['workflowExecutionRetentionPeriod'];

beforeAll(async () => {
  const service = temporal.client.connection.workflowService;
  await service.registerNamespace({ namespace, workflowExecutionRetentionPeriod: threeDays });
  for (let i = 0; ; i++) {
    const ready = await service.describeNamespace({ namespace }).then(
      () => true,
      () => false,
    );
    if (ready) break;
    if (i > 100) throw new Error(`namespace ${namespace} was never described`);
    await sleep(100);
  }
});
afterAll(async () => {
  await Promise.all(started.map((id) => temporal.client.workflow.getHandle(id).terminate('test over').catch(() => undefined)));
});
beforeEach(async () => {
  await schema.pool.query(`DELETE FROM "${schema.name}".claims`);
  await schema.pool.query(`DELETE FROM "${schema.name}".waiters`);
});

/** A completed claim that finished (and was claimed) `daysAgo` days ago, in the 3-day namespace unless told. */
async function completedClaim(daysAgo: number, overrides: Partial<ClaimRequest> = {}): Promise<string> {
  const { claim } = await schema.store.begin(claimRequest({ namespace, ...overrides }), 60_000);
  await schema.store.complete(claim, defaultPayloadConverter.toPayload({ id: 'ch_1' }));
  await schema.pool.query(
    `UPDATE "${schema.name}".claims SET finished_at = now() - $2::float8 * interval '1 day', claimed_at = now() - $2::float8 * interval '1 day' WHERE key = $1`,
    [claim.key, daysAgo],
  );
  return claim.key;
}

async function keysLeft(): Promise<string[]> {
  const { rows } = await schema.pool.query<{ key: string }>(`SELECT key FROM "${schema.name}".claims ORDER BY key`);
  return rows.map((row) => row.key);
}

/** A workflow in `default` that runs until the test ends: no worker picks it up. */
async function runningWorkflow(): Promise<string> {
  const workflowId = uniqueName('wf-running');
  await temporal.client.workflow.start('resumableCallActivity', { taskQueue: uniqueName('tq'), workflowId, args: [{ activity: 'none', args: [] }] });
  started.push(workflowId);
  return workflowId;
}

describe('prune reads the namespace retention from Temporal', () => {
  it('without --older-than, the horizon is the retention of the namespace the claims were made in; a dry run deletes nothing', async () => {
    const old = await completedClaim(4);
    const recent = await completedClaim(2.5);
    const dry = await prune(reachable(), '--dry-run', '--json');
    expect(dry.code).toBe(EXIT.ok);
    expect(JSON.parse(dry.stdout)).toMatchObject({
      dry_run: true,
      pruned: 1,
      horizon: '3d',
      horizon_from: `namespace retention (${namespace})`,
      namespace_retention: { [namespace]: '3d' },
      vendor_key_window: null,
      kept_for_workflows: 0,
    });
    expect(await keysLeft()).toEqual([old, recent].sort());

    const run = await prune(reachable(), '--reason', 'retention');
    expect(run.code).toBe(EXIT.ok);
    expect(run.stdout).toMatch(/^pruning\s+1\nhorizon\s+3d\nhorizon_from\s+namespace retention/m);
    expect(run.stdout).toMatch(/^pruned\s+1$/m);
    expect(await keysLeft()).toEqual([recent]);
  });

  it('refuses a horizon shorter than the namespace retention, saying why; --force prunes at it', async () => {
    const key = await completedClaim(2.5);
    const refused = await prune(reachable(), '--older-than', '2d');
    expect(refused.code).toBe(EXIT.usage);
    expect(refused.stderr).toMatch(
      new RegExp(`--older-than 2d is shorter than the retention of namespace ${namespace} \\(3d\\): .*reset.*--force.*Nothing was deleted`),
    );
    expect(await keysLeft()).toEqual([key]);

    const forced = await prune(reachable(), '--older-than', '2d', '--force', '--json');
    expect(forced.code).toBe(EXIT.ok);
    expect(JSON.parse(forced.stdout)).toMatchObject({ dry_run: false, pruned: 1, horizon: '2d', horizon_from: '--older-than' });
    expect(await keysLeft()).toEqual([]);
  });

  it('keeps the claims of a workflow still running, and of one closed within the horizon, however old the claims', async () => {
    const running = await runningWorkflow();
    const closedJustNow = await runningWorkflow();
    await temporal.client.workflow.getHandle(closedJustNow).terminate('closed within the horizon');
    const ofRunning = await completedClaim(10, { namespace: 'default', workflowId: running });
    const ofClosed = await completedClaim(10, { namespace: 'default', workflowId: closedJustNow });
    await completedClaim(10, { namespace: 'default' }); // its workflow is not on the server: nothing can reset it

    const run = await prune(reachable(), '--older-than', '5d', '--json');
    expect(run.code).toBe(EXIT.ok);
    expect(JSON.parse(run.stdout)).toMatchObject({ pruned: 1, kept_for_workflows: 2, temporal: expect.stringMatching(/^asked at /) });
    expect(await keysLeft()).toEqual([ofRunning, ofClosed].sort());
  });

  it('still asks about the workflows when one namespace\'s retention cannot be read', async () => {
    const running = await runningWorkflow();
    const ofRunning = await completedClaim(10, { namespace: 'default', workflowId: running });
    // A namespace deleted since (or one this profile may not describe): its retention cannot be read.
    const ofGone = await completedClaim(10, { namespace: uniqueName('deleted-ns'), workflowId: uniqueName('wf') });

    const run = await prune(reachable(), '--older-than', '5d', '--json');
    expect(run.code).toBe(EXIT.ok);
    expect(run.stderr).toContain('could not tell every namespace\'s retention');
    expect(JSON.parse(run.stdout)).toMatchObject({ temporal: expect.stringMatching(/^asked at /) });
    // Before: nothing was asked, and the running workflow's claim went with the rest.
    expect(await keysLeft()).toContain(ofRunning);
    // Temporal cannot answer for the gone namespace's workflow either: its claim stays, and stderr names it.
    expect(await keysLeft()).toContain(ofGone);
    expect(run.stderr).toMatch(/Temporal could not say whether 1 workflow\(s\) still run/);
  });
});

describe('prune and the vendor key window', () => {
  it('is the default horizon when longer than the retention, and --force does not prune inside it', async () => {
    const key = await completedClaim(4.5);
    const dry = await prune(reachable(), '--vendor-key-window', '5d', '--dry-run', '--json');
    expect(JSON.parse(dry.stdout)).toMatchObject({ pruned: 0, horizon: '5d', horizon_from: '--vendor-key-window', vendor_key_window: '5d' });

    const inside = await prune(reachable(), '--vendor-key-window', '5d', '--older-than', '4d', '--force');
    expect(inside.code).toBe(EXIT.usage);
    expect(inside.stderr).toMatch(/--older-than 4d is shorter than --vendor-key-window 5d: .*--force or not.*Nothing was deleted/);
    expect(await keysLeft()).toEqual([key]);
  });
});

describe('prune --ledger-older-than', () => {
  /** One call's started and finished entries, `daysAgo` days ago. */
  async function ledgerCall(daysAgo: number): Promise<void> {
    const callId = randomUUID();
    const insert = `INSERT INTO "${schema.name}".ledger (call_id, event, key, activity_type, activity_id, attempt, worker, outcome, at)
      VALUES ($1, $2, $3, 'send', '1', 1, 'test', $4, now() - $5::float8 * interval '1 day')`;
    await schema.pool.query(insert, [callId, 'started', `k-${callId}`, null, daysAgo]);
    await schema.pool.query(insert, [callId, 'finished', `k-${callId}`, 'completed', daysAgo]);
  }
  const ledgerEntries = async () => Number((await schema.pool.query(`SELECT count(*) FROM "${schema.name}".ledger`)).rows[0].count);

  it('deletes the ledger calls past its own horizon, after a dry run that deletes nothing', async () => {
    await ledgerCall(40);
    await ledgerCall(10);
    const claim = await completedClaim(4);

    const dry = await prune(reachable(), '--ledger-older-than', '30d', '--dry-run', '--json');
    expect(dry.code).toBe(EXIT.ok);
    expect(JSON.parse(dry.stdout)).toMatchObject({ dry_run: true, pruned: 1, horizon: '3d', ledger_horizon: '30d', ledger_pruned: 2 });
    expect(await ledgerEntries()).toBe(4);
    expect(await keysLeft()).toEqual([claim]);

    const run = await prune(reachable(), '--ledger-older-than', '30d', '--reason', 'retention');
    expect(run.code).toBe(EXIT.ok);
    expect(run.stdout).toMatch(/^ledger_horizon\s+30d\npruning_ledger_entries\s+2$/m);
    expect(run.stdout).toMatch(/^pruned\s+1\nledger_pruned\s+2$/m);
    expect(await ledgerEntries()).toBe(2);
    expect(await keysLeft()).toEqual([]);
  });

  it('refuses a ledger horizon under a day before asking anything', async () => {
    await ledgerCall(0.5);
    const run = await prune(reachable(), '--ledger-older-than', '12h');
    expect(run.code).toBe(EXIT.usage);
    expect(run.stderr).toMatch(/--ledger-older-than 12h is under a day/);
  });
});

describe('prune when Temporal cannot be reached', () => {
  it('says so and wants --older-than rather than guess; given one, prunes at it and says what went unchecked', async () => {
    const key = await completedClaim(10);
    const refused = await prune(unreachable(), '--json');
    expect(refused.code).toBe(EXIT.usage);
    expect(refused.stderr).toMatch(/Temporal cannot be asked \(cannot connect to Temporal at 127\.0\.0\.1:1.*will not guess.*--older-than.*Nothing was deleted/);
    expect(refused.stdout).toBe('');
    expect(await keysLeft()).toEqual([key]);

    const given = await prune(unreachable(), '--older-than', '7d', '--json');
    expect(given.code).toBe(EXIT.ok);
    expect(given.stderr).toMatch(/not checked against the namespace's retention, nor whether the workflows of these claims still run/);
    expect(JSON.parse(given.stdout)).toMatchObject({ pruned: 1, namespace_retention: null, temporal: expect.stringMatching(/^not asked: cannot connect/) });
    expect(await keysLeft()).toEqual([]);
  });

  it('blames Temporal, not the database, when Temporal is unreachable over TLS (every Temporal Cloud user)', async () => {
    const key = await completedClaim(10);
    const refused = await prune({ ...unreachable(), TEMPORAL_TLS: 'true' }, '--dry-run');
    expect({ code: refused.code, stderr: refused.stderr }).toEqual({
      code: EXIT.usage,
      // With @temporalio/envconfig it tries and fails; without it (SDK 1.20.1), TLS needs the package.
      stderr: expect.stringMatching(/^Temporal cannot be asked \((cannot connect to Temporal at 127\.0\.0\.1:1 \(TLS\)|TEMPORAL_TLS need @temporalio\/envconfig)/),
    });
    expect(refused.stderr).not.toMatch(/database|sslmode/);
    expect(await keysLeft()).toEqual([key]);
  });
});
