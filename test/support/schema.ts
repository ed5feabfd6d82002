/**
 * One Postgres schema per test file, named from the file: created and migrated
 * before its tests, dropped after a passing run, kept after a failing one so
 * the rows can be inspected.
 */
import { basename } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, inject } from 'vitest';
import { PostgresClaimStore, migrate } from '../../src/index.js';

export interface TestSchema {
  readonly name: string;
  readonly pool: pg.Pool;
  readonly store: PostgresClaimStore;
}

export function useTestSchema(testFile: string): TestSchema {
  const stem = basename(testFile).replace(/\.test\.ts$/, '').replace(/[^a-z0-9]+/gi, '_').toLowerCase();
  const name = `t_${stem}_${randomBytes(3).toString('hex')}`.slice(0, 63);
  let failed = false;
  const state: { pool?: pg.Pool; store?: PostgresClaimStore } = {};

  beforeAll(async () => {
    state.pool = new pg.Pool({ connectionString: inject('databaseUrl'), max: 20 });
    state.pool.on('error', () => undefined); // idle clients of a restarted server
    await migrate(state.pool, { schema: name });
    state.store = new PostgresClaimStore({ pool: state.pool, schema: name });
  });
  beforeEach(({ onTestFailed }) => onTestFailed(() => void (failed = true)));
  afterAll(async () => {
    if (!state.pool) return;
    if (failed) console.log(`Kept schema ${name} for inspection (a test failed).`);
    else await state.pool.query(`DROP SCHEMA "${name}" CASCADE`);
    await state.pool.end();
  });

  return {
    name,
    get pool() {
      if (!state.pool) throw new Error('useTestSchema: the pool exists only inside tests and hooks.');
      return state.pool;
    },
    get store() {
      if (!state.store) throw new Error('useTestSchema: the store exists only inside tests and hooks.');
      return state.store;
    },
  };
}
