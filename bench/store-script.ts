/**
 * The store's own claim and record statements (imported from sql/claims.ts, never copied) as a
 * pgbench script: the parameters an unsigned claim without recorded arguments sends, as literals
 * and pgbench variables.
 */
import { claimsSql } from '../src/store/sql/index.js';
import { LEASE_MS, RESULT_JSON } from './claim-input.js';

const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/**
 * A statement's `$n` placeholders as SQL text. Every placeholder needs a value and every value a
 * placeholder: a statement that gained or lost a parameter must not be measured with values in the
 * wrong places.
 */
function bind(text: string, values: Record<number, string>): string {
  const used = new Set<number>();
  const bound = text.replace(/\$(\d+)/g, (_, n: string) => {
    const value = values[Number(n)];
    if (value === undefined) throw new Error(`no value for $${n}`);
    used.add(Number(n));
    return value;
  });
  const unused = Object.keys(values).map(Number).filter((n) => !used.has(n));
  if (unused.length > 0) throw new Error(`values for parameters the statement does not have: ${unused.map((n) => `$${n}`).join(', ')}`);
  return bound;
}

/** The store's claim and complete, as it sends them for an unsigned claim, `edit`ed. */
export function storeScript(schema: string, edit: { claim?: (sql: string) => string; complete?: (sql: string) => string } = {}): string {
  const statements = claimsSql(`"${schema}"`);
  const claim = bind((edit.claim ?? ((sql) => sql))(statements.claim), {
    1: 'md5(random()::text) || md5(random()::text)',
    2: 'gen_random_uuid()',
    3: `md5('fingerprint') || md5('bench')`,
    4: `'default'`,
    5: `'chargeCard'`,
    6: `'bench-workflow'`,
    7: `'6b1f7c3e-2d4a-4c1e-9a51-0f3a9d2b8e71'`,
    8: ':client_id',
    9: '1',
    10: `'pgbench'`,
    11: String(LEASE_MS),
    12: 'NULL',
    13: 'NULL',
    14: 'NULL',
    15: 'NULL',
    16: 'false',
  });
  const complete = bind((edit.complete ?? ((sql) => sql))(statements.complete), {
    1: ':key',
    2: ':token',
    3: `${literal(JSON.stringify(RESULT_JSON))}::jsonb`,
    4: 'NULL',
    5: 'NULL',
  });
  // pgbench wants each statement on one line or ended by a semicolon; \gset keeps the claim's key and token.
  return `${claim.trim()} \\gset\n${complete.trim()};\n`;
}
