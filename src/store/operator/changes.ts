/**
 * What an operator changes after a refusal: a claim resolved with what the call returned, released
 * because it did not happen, or a release recorded for a key whose row is gone; which outcome a
 * waiting workflow will find; and who was told. Every change runs in a transaction that first locks
 * and checks the claim, so a refused request changes nothing and says why.
 */
import type pg from 'pg';
import type { Payload } from '@temporalio/common';
import type { Claim, Waiter } from '../claim-store.js';
import { toClaim } from '../claim-row.js';
import type { ClaimRow } from '../claim-row.js';
import { ClaimChangeRefusedError, ClaimNotFoundError, SecretRequiredError, changeRefusal } from '../operator-errors.js';
import { payloadToJson } from '../payload-json.js';
import { pgText } from '../pg-text.js';
import { secretIds } from '../record-signing.js';
import { inTransaction } from '../transaction.js';
import { recordOperatorAction } from './context.js';
import type { OperatorContext } from './context.js';
import type { ChangeOptions } from './types.js';

/** It happened, and this is what it returned: later attempts replay `result`. Returns the claim as it was. */
export function resolve(context: OperatorContext, key: string, result: Payload, options: ChangeOptions): Promise<Claim> {
  return change(context, key, 'resolve', options, async (client, claim) => {
    const json = payloadToJson(result);
    const note = pgText(`resolved by an operator (was ${claim.state}${claim.outcomeNote ? `: ${claim.outcomeNote}` : ''})`);
    const { mac, secretId } = context.signer.sign({ ...claim, state: 'completed', result: json, outcomeNote: note, outcomeDetail: null });
    await client.query(context.sql.claims.resolveByOperator, [key, json, note, mac, secretId]);
    return { state: 'completed' };
  });
}

/** It did not happen: the claim goes, so the next attempt runs the activity for real. Returns the claim as it was. */
export function release(context: OperatorContext, key: string, options: ChangeOptions): Promise<Claim> {
  return change(context, key, 'release', options, async (client) => {
    await client.query(context.sql.claims.releaseByOperator, [key]);
    return { state: 'released' };
  });
}

/** It did not happen, for a key with no claim left (deleted outside the CLI): the release goes on the trail. */
export async function releaseAbsent(context: OperatorContext, key: string, options: { reason?: string | undefined }): Promise<void> {
  await context.ready();
  await inTransaction(context.pool, async (client) => {
    const { rows } = await client.query(context.sql.claims.existsForUpdate, [key]);
    if (rows.length > 0) {
      throw new ClaimChangeRefusedError('has-claim', undefined, `Key ${key} has a claim: use \`release\`, which checks it.`);
    }
    await recordOperatorAction(context, client, {
      action: 'release',
      key,
      reason: options.reason,
      forced: true,
      before: { state: 'absent' },
      after: { state: 'released' },
    });
  });
}

/**
 * What a workflow waiting on `key` in `resumable()` will find when called again: the recorded result
 * (`resolved`) or no claim (`released`). Refused while the claim has no outcome yet, or its record does not check.
 */
export async function outcomeFor(context: OperatorContext, key: string): Promise<'resolved' | 'released'> {
  await context.ready();
  const { rows } = await context.pool.query<ClaimRow>(context.sql.claims.get, [key]);
  if (!rows[0]) {
    // No claim is "released" only if an operator released it. A row deleted any other way (by hand,
    // by a writer of the table) says nothing about the vendor: calling again could repeat the call.
    const { rows: released } = await context.pool.query(context.sql.trail.released, [key]);
    if (released.length > 0) return 'released';
    throw new ClaimNotFoundError(
      key,
      'and no release of it is on the operator trail: the row was deleted outside the CLI, or pruned. A resumed ' +
        'call would run for real. Check the vendor; if it did not happen, `temporal-idempotency release-absent ' +
        `${key} --reason …\` records that, and \`resume\` then lets the workflow call again.`,
    );
  }
  const claim = toClaim(rows[0], context.signer);
  if (claim.authenticity === 'rejected' || claim.authenticity === 'unverifiable') {
    throw new ClaimChangeRefusedError('not-authentic', claim, `Key ${key}'s record ${authenticityText(claim)}: see SECURITY.md before resuming anything.`);
  }
  if (claim.state === 'completed') return 'resolved';
  throw new ClaimChangeRefusedError(
    'no-outcome',
    claim,
    `Key ${key} has no outcome on record yet (${claim.state}); a resumed call would be refused again. ` +
      `Check the vendor, then \`resolve\` or \`release\` it.`,
  );
}

/** Notes that a waiter was told of a decision; it stays, so `resume` reaches it again if it still waits. */
export async function markSignalled(context: OperatorContext, waiter: Pick<Waiter, 'key' | 'namespace' | 'workflowId'>): Promise<void> {
  await context.ready();
  await context.pool.query(context.sql.waiters.markSignalled, [waiter.key, waiter.namespace, waiter.workflowId]);
}

/** Forgets a waiter whose workflow is closed: nothing waits there any more. */
export async function forgetWaiter(context: OperatorContext, waiter: Pick<Waiter, 'key' | 'namespace' | 'workflowId'>): Promise<void> {
  await context.ready();
  await context.pool.query(context.sql.waiters.forget, [waiter.key, waiter.namespace, waiter.workflowId]);
}

/** Why a record cannot be obeyed, for an operator's message. */
function authenticityText(claim: Claim): string {
  return claim.authenticity === 'rejected'
    ? `does not check under secret ${claim.signedBy}, which signed it: it was written or changed without it (forged, copied, or edited)`
    : claim.signedBy === null
      ? "is unsigned, and the CLI's settings require signed records (add 'unsigned' to previousSecrets only while adopting a first secret)"
      : `is signed by secret ${claim.signedBy}, which the CLI was not given (--worker-config, with previousSecrets)`;
}

/** Locks the claim, checks the change is allowed, applies it, and records who did it and why. */
async function change(
  context: OperatorContext,
  key: string,
  action: 'resolve' | 'release',
  options: ChangeOptions,
  apply: (client: pg.PoolClient, claim: Claim) => Promise<{ state: string }>,
): Promise<Claim> {
  await context.ready();
  return inTransaction(context.pool, async (client) => {
    const { rows } = await client.query<ClaimRow>(context.sql.claims.getForUpdate, [key]);
    if (!rows[0]) throw new ClaimNotFoundError(key);
    const claim = toClaim(rows[0], context.signer);
    const refusal = changeRefusal(claim, action, options.force, secretIds('distrust', options.distrust ?? []));
    if (refusal) throw refusal;
    if (action === 'resolve' && claim.signedBy !== null && context.signer.signingSecretId === null) {
      throw new SecretRequiredError(
        `Key ${key}'s record is signed (secret ${claim.signedBy}): the workers sign their records, and refuse one the CLI ` +
          `would write unsigned. Give the CLI their secret (TEMPORAL_IDEMPOTENCY_SECRET, or secret in --worker-config). ` +
          'Nothing was changed.',
      );
    }
    // Resolving signs the row, fingerprint and all: never over a record that does not check (forged, or read
    // without the right secret), unless the operator says they know.
    if (action === 'resolve' && (claim.authenticity === 'rejected' || claim.authenticity === 'unverifiable') && !options.force) {
      throw new ClaimChangeRefusedError(
        'not-authentic',
        claim,
        `Key ${key}'s record ${authenticityText(claim)}. Nothing was changed; --force signs it anyway, once you know ` +
          'it is genuine (see SECURITY.md).',
      );
    }
    const after = await apply(client, claim);
    await recordOperatorAction(context, client, {
      action,
      key,
      reason: options.reason,
      forced: options.force,
      before: { state: claim.state, attempt: claim.attempt, claimedBy: claim.claimedBy, ownerAlive: claim.ownerAlive },
      after,
    });
    return claim;
  });
}
