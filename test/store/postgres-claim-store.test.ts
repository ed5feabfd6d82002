import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import {
  InvalidIdentifierError,
  PostgresClaimStore,
  SchemaNotMigratedError,
  migrate,
} from '../../src/index.js';
import { defaultPayloadConverter } from '@temporalio/common';
import { MIGRATIONS } from '../../src/store/migrations/index.js';
import { useTestSchema } from '../support/schema.js';
import { claimRequest } from '../support/claims.js';

const schema = useTestSchema(import.meta.filename);
const LEASE_MS = 30_000;

const request = claimRequest;

describe('PostgresClaimStore', () => {
  it('lets exactly one of 50 concurrent begins on one key win, each on its own connection', async () => {
    const claim = request();
    const clients = await Promise.all(
      Array.from({ length: 50 }, async () => {
        const pool = new pg.Pool({ connectionString: inject('databaseUrl'), max: 1 });
        await pool.query('SELECT 1'); // connect before the race, so the race is on the insert
        return pool;
      }),
    );
    try {
      const stores = clients.map((pool) => new PostgresClaimStore({ pool, schema: schema.name }));
      const results = await Promise.all(stores.map((store, i) => store.begin({ ...claim, claimedBy: `racer-${i}` }, LEASE_MS)));
      const winners = results.filter((result) => result.won);
      expect(winners).toHaveLength(1);
      const winnerToken = winners[0]!.claim.token;
      for (const result of results) expect(result.claim.token).toBe(winnerToken);
      const { rows } = await schema.pool.query(`SELECT count(*)::int AS n FROM "${schema.name}".claims WHERE key = $1`, [claim.key]);
      expect(rows[0].n).toBe(1);
    } finally {
      await Promise.all(clients.map((pool) => pool.end()));
    }
  });

  it('records a result only for the token that holds the claim', async () => {
    const claim = request();
    const { claim: held } = await schema.store.begin(claim, LEASE_MS);
    const payload = defaultPayloadConverter.toPayload({ chargeId: 'ch_1' });
    expect(await schema.store.complete({ ...held, token: randomUUID() }, payload)).toBe(false);
    expect((await schema.store.get(claim.key))?.state).toBe('claimed');
    expect(await schema.store.complete(held, payload)).toBe(true);
    const completed = await schema.store.get(claim.key);
    expect(completed?.state).toBe('completed');
    expect(defaultPayloadConverter.fromPayload(completed!.result!)).toEqual({ chargeId: 'ch_1' });
    expect(completed?.finishedAt).toBeInstanceOf(Date);
  });

  it('never releases a claim it does not hold, nor a completed one', async () => {
    const claim = request();
    const { claim: held } = await schema.store.begin(claim, LEASE_MS);
    expect(await schema.store.release({ ...held, token: randomUUID() })).toBe(false);
    expect(await schema.store.get(claim.key)).not.toBeNull();
    await schema.store.complete(held, defaultPayloadConverter.toPayload(1));
    expect(await schema.store.release(held)).toBe(false);
    expect((await schema.store.get(claim.key))?.state).toBe('completed');
  });

  it('frees the key on release, so the next begin wins with a new token', async () => {
    const claim = request();
    const first = await schema.store.begin(claim, LEASE_MS);
    expect(await schema.store.release(first.claim)).toBe(true);
    const second = await schema.store.begin({ ...claim, attempt: 2 }, LEASE_MS);
    expect(second.won).toBe(true);
    expect(second.claim.token).not.toBe(first.claim.token);
    expect(second.claim.attempt).toBe(2);
  });

  it('keeps a claim marked unknown, with its note, and later begins find it', async () => {
    const claim = request();
    const { claim: held } = await schema.store.begin(claim, LEASE_MS);
    expect(await schema.store.markUnknown(held, { summary: 'timeout after send', detail: null })).toBe(true);
    const later = await schema.store.begin({ ...claim, attempt: 2 }, LEASE_MS);
    expect(later.won).toBe(false);
    expect(later.claim.state).toBe('unknown');
    expect(later.claim.outcomeNote).toBe('timeout after send');
    expect(later.claim.attempt).toBe(1);
  });

  it('stamps claims with the database clock', async () => {
    const { claim } = await schema.store.begin(request(), LEASE_MS);
    const { rows } = await schema.pool.query<{ now: Date }>('SELECT now() AS now');
    expect(Math.abs(rows[0]!.now.getTime() - claim.claimedAt.getTime())).toBeLessThan(5_000);
  });
});

describe('takeover of an orphaned claim', () => {
  it('gives the claim the taker\'s identity and deadline, never a mix of two attempts', async () => {
    const orphanRequest = request({ workflowId: 'wf-orphan', runId: 'run-orphan', activityId: '7' });
    const { claim: orphan } = await schema.store.begin(orphanRequest, 60_000);
    await schema.store.markUnknown(orphan, { summary: 'timeout after send', detail: null });
    const taker = { ...orphanRequest, workflowId: 'wf-taker', runId: 'run-taker', activityId: '3', attempt: 2, claimedBy: 'taker/2', deadlineMs: 90_000 };
    const taken = await schema.store.takeOver({ ...orphan, state: 'unknown' }, taker, 60_000);
    expect(taken).toMatchObject({ state: 'claimed', workflowId: 'wf-taker', runId: 'run-taker', activityId: '3', attempt: 2, claimedBy: 'taker/2' });
    expect(taken!.deadlineAt!.getTime() - taken!.claimedAt.getTime()).toBeCloseTo(90_000, -2);
    expect(await schema.store.get(orphan.key)).toMatchObject({ workflowId: 'wf-taker', runId: 'run-taker', activityId: '3' });
  });
});

describe('leases and waiting', () => {
  it('judges an owner dead once its lease lapses, by the database clock', async () => {
    const claim = request();
    const { claim: held } = await schema.store.begin(claim, 300);
    expect(held.ownerAlive).toBe(true);
    expect((await schema.store.get(claim.key))?.ownerAlive).toBe(true);
    await sleep(600);
    const lapsed = await schema.store.get(claim.key);
    expect(lapsed?.ownerAlive).toBe(false);
    expect(lapsed?.leaseExpiresAt?.getTime()).toBeLessThan(Date.now());
  });

  it('renews every held lease in one statement, and only claims still held with their token', async () => {
    const claims = await Promise.all(Array.from({ length: 5 }, () => schema.store.begin(request(), 300)));
    const [released, ...held] = claims.map((result) => result.claim);
    await schema.store.release(released!);
    const renewed = await schema.store.renewLeases(
      [...held, released!, { ...held[0]!, token: randomUUID() }],
      60_000,
    );
    expect([...renewed].sort()).toEqual(held.map((claim) => claim.token).sort());
    await sleep(600);
    for (const claim of held) expect((await schema.store.get(claim.key))?.ownerAlive).toBe(true);
  });

  it('wakes a watcher by NOTIFY as soon as the owner records its outcome', async () => {
    const claim = request();
    const { claim: held } = await schema.store.begin(claim, LEASE_MS);
    const watch = await schema.store.watch(claim.key);
    try {
      expect((await watch.current())?.state).toBe('claimed');
      const woken = watch.changed(20_000);
      const started = Date.now();
      await schema.store.complete(held, defaultPayloadConverter.toPayload('done'));
      expect(await woken).toBe(true);
      expect(Date.now() - started).toBeLessThan(2_000);
      expect((await watch.current())?.state).toBe('completed');
    } finally {
      watch.close();
    }
  });

  it('sends no NOTIFY for a claim nobody waits on, so plain completions do not serialize on it', async () => {
    const listener = new pg.Client({ connectionString: inject('databaseUrl') });
    await listener.connect();
    const heard: string[] = [];
    listener.on('notification', (message) => heard.push(message.payload ?? ''));
    await listener.query(`LISTEN "temporal_idempotency_${schema.name}"`);
    try {
      const quiet = request();
      const { claim: quietClaim } = await schema.store.begin(quiet, LEASE_MS);
      await schema.store.complete(quietClaim, defaultPayloadConverter.toPayload(1));
      const awaited = request();
      const { claim: awaitedClaim } = await schema.store.begin(awaited, LEASE_MS);
      const watch = await schema.store.watch(awaited.key);
      await watch.current();
      await schema.store.release(awaitedClaim);
      watch.close();
      await sleep(300);
      expect(heard).toEqual([awaited.key]);
    } finally {
      await listener.end();
    }
  });

  it('lets a watcher notice a release: the claim is gone', async () => {
    const claim = request();
    const { claim: held } = await schema.store.begin(claim, LEASE_MS);
    const watch = await schema.store.watch(claim.key);
    try {
      await watch.current();
      const woken = watch.changed(20_000);
      await schema.store.release(held);
      expect(await woken).toBe(true);
      expect(await watch.current()).toBeNull();
    } finally {
      watch.close();
    }
  });
});

describe('migrate', () => {
  it('is safe when many workers run it at once, and applies each migration once', async () => {
    const fresh = `t_migrate_race_${randomUUID().slice(0, 8)}`;
    const reports = await Promise.all(Array.from({ length: 8 }, () => migrate(schema.pool, { schema: fresh })));
    try {
      expect(reports.flatMap((report) => report.applied).sort((a, b) => a - b)).toEqual(MIGRATIONS.map((m) => m.id));
      const { rows } = await schema.pool.query(`SELECT id FROM "${fresh}".migrations ORDER BY id`);
      expect(rows).toEqual(MIGRATIONS.map((m) => ({ id: m.id })));
      expect((await migrate(schema.pool, { schema: fresh })).applied).toEqual([]);
    } finally {
      await schema.pool.query(`DROP SCHEMA "${fresh}" CASCADE`);
    }
  });

  it.each([
    ['an injection attempt', 'x"; DROP TABLE users; --'],
    ['upper case', 'Billing'],
    ['an empty name', ''],
    ['a name Postgres would truncate', 'a'.repeat(64)],
    ['a number', 42],
  ])('refuses %s as a schema name, naming it, before any SQL runs', async (_, bad) => {
    await expect(migrate(schema.pool, { schema: bad as string })).rejects.toThrow(InvalidIdentifierError);
    expect(() => new PostgresClaimStore({ pool: schema.pool, schema: bad as string })).toThrow(/Invalid schema/);
  });

  it('names the fix when a store is used on a schema that was never migrated', async () => {
    const store = new PostgresClaimStore({ pool: schema.pool, schema: 'never_migrated_here' });
    await expect(store.begin(request(), LEASE_MS)).rejects.toThrow(SchemaNotMigratedError);
    await expect(store.begin(request(), LEASE_MS)).rejects.toThrow(/run migrate\(\)/);
  });
});
