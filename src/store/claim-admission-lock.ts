/**
 * The advisory lock every claim takes shared, in the trigger that admits it
 * (migration 7). Whatever changes which claims are admitted (activating
 * a key format, a migration that leaves older workers behind) takes it
 * exclusively, so it waits for every claim in flight and, once it commits, no
 * claim under the old rule can appear.
 */
import type pg from 'pg';

const CLAIM_ADMISSION_LOCK_CLASS = 8273181;

export async function lockClaimAdmission(client: pg.ClientBase, schema: string): Promise<void> {
  // The trigger keys the lock with `TG_TABLE_SCHEMA || '/key-format'`: the schema's name, unquoted.
  await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [CLAIM_ADMISSION_LOCK_CLASS, `${schema}/key-format`]);
}

/**
 * The same lock shared, as the trigger and the settling statements take it: for an operator's change
 * that signs a row with the format in force, so no activation or retirement commits between reading
 * that format and committing the change.
 */
export async function shareClaimAdmission(client: pg.ClientBase, schema: string): Promise<void> {
  await client.query('SELECT pg_advisory_xact_lock_shared($1, hashtext($2))', [CLAIM_ADMISSION_LOCK_CLASS, `${schema}/key-format`]);
}
