/**
 * The operator's CLI against real Postgres: each command, and each bad input
 * ending in a clear error, the documented exit code, and no change.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { migrate } from '../../src/index.js';
import { EXIT } from '../../src/cli/errors.js';
import { useTestSchema } from '../support/schema.js';
import { claimRequest } from '../support/claims.js';
import { runCli } from '../support/cli.js';

const schema = useTestSchema(import.meta.filename);
const cli = (...args: string[]) => runCli([...args, '--schema', schema.name, '--no-signal']);
/** `prune` asks Temporal about the namespace's retention and the claims' workflows: the dev server's. */
const prune = (...args: string[]) => runCli(['prune', ...args, '--schema', schema.name], { TEMPORAL_ADDRESS: inject('temporalAddress') });

const request = claimRequest;

const tempDirs: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'cli-test-'));
  tempDirs.push(dir);
  return dir;
}
afterAll(() => Promise.all(tempDirs.map((dir) => rm(dir, { recursive: true, force: true }))));

/** Seeds one claim in each state a person meets. */
async function seed() {
  const live = await schema.store.begin(request({ activityType: 'placeCall' }), 60_000);
  const dead = await schema.store.begin(request({ activityType: 'sendSms' }), 1_000);
  const unknown = await schema.store.begin(request(), 60_000);
  await schema.store.markUnknown(unknown.claim, { summary: 'timeout after send', detail: null });
  const done = await schema.store.begin(request(), 60_000);
  await schema.store.complete(done.claim, defaultPayloadConverter.toPayload({ id: 'ch_9' }));
  await schema.pool.query(`UPDATE "${schema.name}".claims SET lease_expires_at = now() - interval '1 second' WHERE key = $1`, [dead.claim.key]);
  return { live: live.claim.key, dead: dead.claim.key, unknown: unknown.claim.key, done: done.claim.key };
}

async function stateOf(key: string): Promise<string | null> {
  return (await schema.store.get(key))?.state ?? null;
}

describe('temporal-idempotency CLI', () => {
  it('--version prints the package version, and nothing else', async () => {
    const manifest = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    const run = await runCli(['--version']);
    expect(run).toEqual({ code: EXIT.ok, stdout: `${manifest.version}\n`, stderr: '' });
  });

  it('migrate applies nothing on a current schema, and says so', async () => {
    const run = await cli('migrate', '--json');
    expect(run.code).toBe(EXIT.ok);
    expect(JSON.parse(run.stdout)).toMatchObject({ schema: schema.name, applied: 'none (already current)' });
  });

  it('list shows claims without an outcome first, and filters by state, workflow, activity and age', async () => {
    const keys = await seed();
    const all = JSON.parse((await cli('list', '--json', '--limit', '1000')).stdout) as Array<{ key: string; state: string }>;
    const ours = all.filter((row) => Object.values(keys).includes(row.key));
    expect(ours.map((row) => row.state).slice(-1)).toEqual(['completed']);
    const firstCompleted = all.findIndex((row) => row.state === 'completed');
    expect(all.slice(firstCompleted).every((row) => row.state === 'completed')).toBe(true);

    const unknown = JSON.parse((await cli('list', '--state', 'unknown', '--json')).stdout) as Array<{ key: string }>;
    expect(unknown.map((row) => row.key)).toContain(keys.unknown);
    expect(unknown.map((row) => row.key)).not.toContain(keys.done);
    const byActivity = JSON.parse((await cli('list', '--activity', 'sendSms', '--json')).stdout) as Array<{ key: string }>;
    expect(byActivity.map((row) => row.key)).toContain(keys.dead);
    const old = JSON.parse((await cli('list', '--older-than', '1h', '--json')).stdout) as unknown[];
    expect(old).toEqual([]);

    const table = await cli('list', '--state', 'open');
    expect(table.stdout.split('\n')[0]).toMatch(/^key\s+state\s+activity_type\s+workflow_id/);
    expect(table.stdout).toContain(keys.live);
  });

  it('show prints one claim with its decoded result', async () => {
    const { done } = await seed();
    const run = await cli('show', done, '--json');
    expect(run.code).toBe(EXIT.ok);
    expect(JSON.parse(run.stdout)).toMatchObject({ key: done, state: 'completed', result: { id: 'ch_9' } });
  });

  it('show prints a binary result as base64, in JSON and in the table', async () => {
    const binary = await schema.store.begin(request({ activityType: 'fetchPdf' }), 60_000);
    await schema.store.complete(binary.claim, defaultPayloadConverter.toPayload(new Uint8Array([0, 1, 2, 250, 255])));
    const json = await cli('show', binary.claim.key, '--json');
    expect(json.code).toBe(EXIT.ok);
    expect(JSON.parse(json.stdout)).toMatchObject({ result: { bytes_base64: 'AAEC+v8=' } });
    const table = await cli('show', binary.claim.key);
    expect(table.stdout).toMatch(/^result\s+\{"bytes_base64":"AAEC\+v8="\}$/m);
  });

  it('resolve records the given result for an orphaned claim, so later attempts return it', async () => {
    const { dead, unknown } = await seed();
    for (const key of [dead, unknown]) {
      const run = await cli('resolve', key, '--result', '{"id":"ch_manual"}', '--json');
      expect(run.code).toBe(EXIT.ok);
      expect(JSON.parse(run.stdout)).toMatchObject({ key, state: 'completed', result: { id: 'ch_manual' } });
      const claim = await schema.store.get(key);
      expect(defaultPayloadConverter.fromPayload(claim!.result!)).toEqual({ id: 'ch_manual' });
      expect(claim!.outcomeNote).toMatch(/resolved by an operator/);
    }
  });

  it('resolve reads a result too large for a command line from --result-file, or from standard input with -', async () => {
    const { dead, unknown } = await seed();
    // Over Linux's 128 KiB limit for one argument: only a file or a pipe can carry it.
    // The shape the activity type returned before ({ id }), or resolve would refuse it.
    const large = { id: `ch_large_${'x'.repeat(200_000)}` };
    const path = join(await tempDir(), 'result.json');
    await writeFile(path, JSON.stringify(large));
    const fromFile = await cli('resolve', dead, '--result-file', path, '--json');
    expect(fromFile.code).toBe(EXIT.ok);
    expect(defaultPayloadConverter.fromPayload((await schema.store.get(dead))!.result!)).toEqual(large);

    const fromStdin = await runCli(['resolve', unknown, '--result-file', '-', '--schema', schema.name, '--no-signal'], {}, { input: JSON.stringify(large) });
    expect(fromStdin.code).toBe(EXIT.ok);
    expect(defaultPayloadConverter.fromPayload((await schema.store.get(unknown))!.result!)).toEqual(large);
  });

  it('release deletes an orphaned claim, so the next attempt runs for real', async () => {
    const { dead } = await seed();
    const run = await cli('release', dead);
    expect(run.code).toBe(EXIT.ok);
    expect(await stateOf(dead)).toBeNull();
  });

  it('prune deletes old completed claims only, never one without an outcome', async () => {
    const keys = await seed();
    await schema.pool.query(`UPDATE "${schema.name}".claims SET finished_at = now() - interval '10 days', claimed_at = now() - interval '10 days' WHERE key = ANY($1)`, [
      [keys.done, keys.unknown],
    ]);
    const dry = await prune('--older-than', '7d', '--dry-run', '--json');
    expect(JSON.parse(dry.stdout).pruned).toBeGreaterThanOrEqual(1);
    expect(await stateOf(keys.done)).toBe('completed');
    const run = await prune('--older-than', '7d');
    expect(run.code).toBe(EXIT.ok);
    // What goes is printed before it goes: how many, from when to when, of which activity types.
    expect(run.stdout).toMatch(
      /^pruning\s+\d+\nhorizon\s+7d\nhorizon_from\s+--older-than\nnamespace_retention\s+\{"default":"\S+"\}\nvendor_key_window\s+-\ntemporal\s+asked at .+\nkept_for_workflows\s+0\noldest_finished_at\s+\S+\nnewest_finished_at\s+\S+\nby_activity_type\s+\{.*"chargeCard":\d+.*\}\npruned\s+\d+/m,
    );
    expect(await stateOf(keys.done)).toBeNull();
    expect(await stateOf(keys.unknown)).toBe('unknown');
    expect(await stateOf(keys.live)).toBe('claimed');
  });

  it('prune --json gives the same fields with and without --dry-run: the count as pruned, and dry_run', async () => {
    const { done } = await seed();
    await schema.pool.query(`UPDATE "${schema.name}".claims SET finished_at = now() - interval '20 days' WHERE key = $1`, [done]);
    const dry = JSON.parse((await prune('--older-than', '14d', '--dry-run', '--json')).stdout) as Record<string, unknown>;
    expect(await stateOf(done)).toBe('completed');
    const real = JSON.parse((await prune('--older-than', '14d', '--json')).stdout) as Record<string, unknown>;
    expect(await stateOf(done)).toBeNull();
    expect(Object.keys(dry)).toEqual(Object.keys(real));
    expect(dry).toMatchObject({ dry_run: true, pruned: 1, horizon: '14d', by_activity_type: { chargeCard: 1 } });
    expect(real).toMatchObject({ dry_run: false, pruned: 1, horizon: '14d', by_activity_type: { chargeCard: 1 } });
  });

  it('prune puts the keys it deleted and its --force on the operator trail, and show of a pruned key prints that trail', async () => {
    const { done } = await seed();
    await schema.pool.query(`UPDATE "${schema.name}".claims SET finished_at = now() - interval '2 hours' WHERE key = $1`, [done]);
    const run = await prune('--older-than', '90m', '--force', '--reason', 'disk full');
    expect(run.code).toBe(EXIT.ok);
    const { rows } = await schema.pool.query(
      `SELECT forced, reason, after_state FROM "${schema.name}".operator_actions WHERE action = 'prune' ORDER BY id DESC LIMIT 1`,
    );
    expect(rows[0]).toMatchObject({ forced: true, reason: 'disk full', after_state: { pruned: 1, keys: [done], keysNotListed: 0 } });
    const shown = await cli('show', done);
    expect(shown.code).toBe(EXIT.notFound);
    expect(shown.stderr).toMatch(new RegExp(`No claim for key ${done}; the operator trail has 1 entry for it:\\n  \\S+ prune by \\S+ \\(--force\\) reason: disk full\\n`));
  });

  it('ledger lists the calls that went out, newest first', async () => {
    const callId = randomUUID();
    const call = { callId, key: 'k-ledger', activityType: 'chargeCard', workflowId: 'wf-l', runId: 'r', activityId: '1', attempt: 1, worker: 'w/1' };
    await schema.store.auditLedger().recordStart(call);
    await schema.store.auditLedger().recordFinish(call, 'completed', null);
    const run = await cli('ledger', '--key', 'k-ledger', '--json');
    expect(run.code).toBe(EXIT.ok);
    expect(JSON.parse(run.stdout)).toEqual([expect.objectContaining({ key: 'k-ledger', outcome: 'completed', worker: 'w/1' })]);
  });

  describe('bad input gets a clear error, its exit code, and changes nothing', () => {
    it.each([
      ['an unknown key', ['show', 'no-such-key'], EXIT.notFound, /No claim for key no-such-key/],
      ['resolve of an unknown key', ['resolve', 'no-such-key', '--result', '{}'], EXIT.notFound, /No claim/],
      ['release of an unknown key', ['release', 'no-such-key'], EXIT.notFound, /No claim/],
      ['an unknown command', ['frobnicate'], EXIT.usage, /Unknown command "frobnicate"/],
      ['an unknown flag', ['list', '--colour'], EXIT.usage, /Unknown option '--colour'/],
      ['a bad duration', ['prune', '--older-than', 'soon'], EXIT.usage, /--older-than "soon" is not a duration/],
      ['a duration without a unit', ['prune', '--older-than', '7'], EXIT.usage, /--older-than "7" is not a duration with a unit/],
      ['a prune horizon under an hour', ['prune', '--older-than', '30m'], EXIT.usage, /under an hour.*--force.*Nothing was deleted/],
      ['the old name of --force', ['prune', '--older-than', '30m', '--allow-short'], EXIT.usage, /--allow-short is now --force/],
      ['a bad vendor key window', ['prune', '--vendor-key-window', '24'], EXIT.usage, /--vendor-key-window "24" is not a duration with a unit/],
      ['a bad state filter', ['list', '--state', 'done'], EXIT.usage, /--state "done" is not one of/],
      ['a bad limit', ['list', '--limit', '0'], EXIT.usage, /--limit "0" is not a positive integer/],
      ['resolve without a key', ['resolve'], EXIT.usage, /resolve needs a KEY/],
    ])('%s', async (_, args, code, message) => {
      const run = await cli(...args);
      expect(run.code).toBe(code);
      expect(run.stderr).toMatch(message);
    });

    it('invalid JSON for resolve', async () => {
      const { dead } = await seed();
      const run = await cli('resolve', dead, '--result', '{id: ch_1}');
      expect(run.code).toBe(EXIT.usage);
      expect(run.stderr).toMatch(/--result is not valid JSON .*nothing was changed/);
      expect(await stateOf(dead)).toBe('claimed');
    });

    it('resolve with both --result and --result-file, or a result file that is missing, empty or not JSON', async () => {
      const { dead } = await seed();
      const dir = await tempDir();
      await writeFile(join(dir, 'bad.json'), '{id: ch_1}');
      await writeFile(join(dir, 'empty.json'), '');
      const cases: Array<[string[], RegExp, string?]> = [
        [['--result', '{}', '--result-file', join(dir, 'bad.json')], /takes --result or --result-file, not both/],
        [['--result-file', join(dir, 'missing.json')], /--result-file .*missing\.json could not be read \(ENOENT.*nothing was changed/],
        [['--result-file', join(dir, 'bad.json')], /--result-file .*bad\.json is not valid JSON .*nothing was changed/],
        [['--result-file', join(dir, 'empty.json')], /--result-file .*empty\.json is not valid JSON/],
        [['--result-file', '-'], /--result-file - \(standard input\) is not valid JSON/, '{"id":'],
      ];
      for (const [flags, message, input] of cases) {
        const run = await runCli(['resolve', dead, ...flags, '--schema', schema.name, '--no-signal'], {}, { input });
        expect(run.code).toBe(EXIT.usage);
        expect(run.stderr).toMatch(message);
      }
      expect(await stateOf(dead)).toBe('claimed');
    });

    it('resolve without --result', async () => {
      const { dead } = await seed();
      const run = await cli('resolve', dead);
      expect(run.code).toBe(EXIT.usage);
      expect(run.stderr).toMatch(/resolve needs what the call returned, as JSON: --result .* or --result-file PATH/);
      expect(await stateOf(dead)).toBe('claimed');
    });

    it('resolving or releasing a completed key', async () => {
      const { done } = await seed();
      for (const args of [['resolve', done, '--result', '{"id":"other"}'], ['release', done]]) {
        const run = await cli(...args);
        expect(run.code).toBe(EXIT.conflict);
        expect(run.stderr).toMatch(/already completed/);
        expect(run.stderr).toContain(`temporal-idempotency resume ${done}`);
      }
      const claim = await schema.store.get(done);
      expect(defaultPayloadConverter.fromPayload(claim!.result!)).toEqual({ id: 'ch_9' });
    });

    it('releasing or resolving a key whose call may be in flight, without --force', async () => {
      const { live } = await seed();
      for (const args of [['release', live], ['resolve', live, '--result', '1']]) {
        const run = await cli(...args);
        expect(run.code).toBe(EXIT.conflict);
        expect(run.stderr).toMatch(/its call may be in flight right now.*--force/);
        expect(await stateOf(live)).toBe('claimed');
      }
      expect((await cli('release', live, '--force')).code).toBe(EXIT.ok);
      expect(await stateOf(live)).toBeNull();
    });

    it('releasing or resolving a lapsed claim before its attempt\'s deadline, without --force', async () => {
      const paused = await schema.store.begin(request({ deadlineMs: 120_000 }), 1_000);
      await schema.pool.query(`UPDATE "${schema.name}".claims SET lease_expires_at = now() - interval '1 second' WHERE key = $1`, [
        paused.claim.key,
      ]);
      for (const args of [['release', paused.claim.key], ['resolve', paused.claim.key, '--result', '1']]) {
        const run = await cli(...args);
        expect(run.code).toBe(EXIT.conflict);
        expect(run.stderr).toMatch(/lease lapsed, but that attempt may run until .*a paused or cut-off worker may still be calling/);
        expect(await stateOf(paused.claim.key)).toBe('claimed');
      }
      expect((await cli('release', paused.claim.key, '--force')).code).toBe(EXIT.ok);
      expect(await stateOf(paused.claim.key)).toBeNull();
    });

    it('a hostile schema name, refused before any SQL is sent', async () => {
      const run = await runCli(['list', '--schema', 'x"; DROP TABLE y; --']);
      expect(run.code).toBe(EXIT.usage);
      expect(run.stderr).toMatch(/Invalid schema "x\\"; DROP TABLE y; --"/);
    });

    it.each([
      ['list', ['list']],
      ['show', ['show', 'k']],
      ['resolve', ['resolve', 'k', '--result', '1']],
      ['release', ['release', 'k']],
      ['resume', ['resume', 'k']],
      ['release-absent', ['release-absent', 'k', '--reason', 'r']],
      ['prune', ['prune', '--older-than', '7d', '--dry-run']],
      ['ledger', ['ledger']],
      ['keys status', ['keys', 'status']],
    ])('%s on a schema never migrated names the schema and the fix, not a missing relation', async (_, args) => {
      const unmigrated = `${schema.name}_none`;
      const run = await runCli([...args, '--schema', unmigrated, '--no-signal']);
      expect(run.code).toBe(EXIT.unavailable);
      expect(run.stderr).toMatch(new RegExp(`Schema "${unmigrated}" is at migration 0 of \\d+: run .*temporal-idempotency migrate --schema ${unmigrated}`));
      expect(run.stderr).not.toMatch(/does not exist/);
    });

    it('on a schema a newer release migrated: works while that release keeps this one working, else exit 5 naming the migration', async () => {
      const newer = `${schema.name}_newer`;
      await migrate(schema.pool, { schema: newer });
      try {
        await schema.pool.query(`INSERT INTO "${newer}".migrations (id, name) VALUES (999, 'from the future')`);
        // Additive, as its compatibility version says: this release's CLI (and workers) keep working.
        expect((await runCli(['list', '--schema', newer])).code).toBe(EXIT.ok);
        await schema.pool.query(`UPDATE "${newer}".settings SET oldest_worker_schema = 999`);
        for (const args of [['list'], ['release', 'k', '--no-signal']]) {
          const run = await runCli([...args, '--schema', newer]);
          expect(run.code).toBe(EXIT.unavailable);
          expect(run.stderr).toMatch(/migration 999, newer than this temporal-idempotency knows/);
        }
      } finally {
        await schema.pool.query(`DROP SCHEMA "${newer}" CASCADE`);
      }
    });

    it('a database that cannot be reached', async () => {
      const run = await runCli(['list', '--schema', schema.name], { DATABASE_URL: 'postgres://nobody:x@127.0.0.1:1/nowhere' });
      expect(run.code).toBe(EXIT.unavailable);
      expect(run.stderr).toMatch(/Cannot reach the database/);
    });
  });
});
