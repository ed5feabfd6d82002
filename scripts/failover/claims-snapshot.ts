/** The claims table of one node, read straight from it (not through the proxy): key → state and token. */
import pg from 'pg';

export interface ClaimState {
  readonly state: string;
  readonly token: string;
}

export type ClaimsSnapshot = ReadonlyMap<string, ClaimState>;

export async function readClaims(connectionString: string, schema: string): Promise<ClaimsSnapshot> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    const { rows } = await client.query<{ key: string } & ClaimState>(`SELECT key, state, token FROM "${schema}".claims`);
    return new Map(rows.map((row) => [row.key, { state: row.state, token: row.token }]));
  } finally {
    await client.end();
  }
}
