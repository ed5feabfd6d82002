/**
 * Found in review, on the operator trail (SECURITY.md: every resolve, release and prune writes a row naming
 * the database user, that nobody but the migrator can change; "an operator who ... lies: that is
 * what the trail and your access reviews are for"). The operator role may INSERT into
 * `operator_actions`, and `database_user` and `at` are only column defaults: an operator appends
 * a release in a colleague's name, dated last week. `show` prints it as theirs, and `resume`
 * (which trusts a release on the trail) lets waiting workflows call again on its word.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { grantStatements } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';

const schema = useTestSchema(import.meta.filename);
const operatorRole = `ti_attack_op_${randomBytes(3).toString('hex')}`;
const PASSWORD = `pw_${randomBytes(6).toString('hex')}`;
let operator: pg.Pool;

beforeAll(async () => {
  await schema.pool.query(`CREATE ROLE "${operatorRole}" LOGIN PASSWORD '${PASSWORD}'`);
  for (const statement of grantStatements({ operator: operatorRole }, schema.name)) await schema.pool.query(statement);
  const url = new URL(inject('databaseUrl'));
  url.username = operatorRole;
  url.password = PASSWORD;
  operator = new pg.Pool({ connectionString: url.toString(), max: 2 });
});

afterAll(async () => {
  await operator.end();
  await schema.pool.query(`DROP OWNED BY "${operatorRole}" CASCADE`);
  await schema.pool.query(`DROP ROLE "${operatorRole}"`);
});

describe('the operator trail', () => {
  it('names the database user who appended a row, and when, whatever the row says', async () => {
    const { rows } = await operator.query<{ database_user: string; recent: boolean }>(
      `INSERT INTO "${schema.name}".operator_actions (database_user, at, action, key, reason)
       VALUES ('alice', now() - interval '7 days', 'release', 'k-forged', 'alice checked the vendor')
       RETURNING database_user, at > now() - interval '1 minute' AS recent`,
    );
    expect(rows).toEqual([{ database_user: operatorRole, recent: true }]);
  });
});
