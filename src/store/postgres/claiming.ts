/**
 * Claiming a key: a primary-key INSERT, committed durably before the call, so two callers can never
 * both win. Claims that arrive while one is in flight go out together (NaturalBatch).
 *
 * A begin draws one token and tries every INSERT under it. When a try's answer is lost (the connection
 * dropped: it may have committed, perhaps later, from a backend that outlived its client), the claim is
 * tried again under the same token until Postgres answers; a claim then found under that token is the
 * caller's own, from the try whose answer was lost, and nothing ran under it. Postgres unreachable for
 * the whole lease leaves such a claim as one whose worker died after claiming: an orphan.
 */
import { randomUUID } from 'node:crypto';
import type { BeginResult, Claim, ClaimRequest } from '../claim-store.js';
import type { ClaimRow } from '../claim-row.js';
import { ClaimContendedError } from '../claim-contended.js';
import { NaturalBatch, settle } from '../natural-batch.js';
import type { Settled } from '../natural-batch.js';
import { payloadToJson } from '../payload-json.js';
import { retryFor } from '../../bounded-retry.js';
import type { StoreContext } from './context.js';
import { rolledBack } from './pg-errors.js';

/** A claim to insert, under the token its begin drew, with its lease. */
interface PendingClaim {
  readonly request: ClaimRequest;
  readonly token: string;
  readonly leaseMs: number;
}

/** How statements are grouped: see `PostgresClaimStoreOptions.batchStatements`. */
export interface Batching {
  readonly maxInFlight: number;
  readonly maxBatch: number;
  readonly stalledAfterMs: number;
}

const BEGIN_ATTEMPTS = 3;

export class Claiming {
  private readonly claims: NaturalBatch<PendingClaim, Claim | null>;

  constructor(
    private readonly context: StoreContext,
    batching: Batching,
  ) {
    this.claims = new NaturalBatch({ ...batching, send: (pending) => this.insertClaims(pending) });
  }

  /** `get` reads a key's claim as it is now (a fresh statement, so a fresh snapshot). */
  async begin(request: ClaimRequest, leaseMs: number, get: (key: string) => Promise<Claim | null>): Promise<BeginResult> {
    // In a refused call's place, the refused call's record decides: it is looked up first, never claimed under.
    const refused = request.refusedKey === undefined || request.refusedKey === request.key ? null : await get(request.refusedKey);
    if (refused) return { won: false, claim: refused };
    const pending = { request, token: randomUUID(), leaseMs };
    // A claim can be released between our failed insert and our read; then we simply try again.
    for (let attempt = 1; attempt <= BEGIN_ATTEMPTS; attempt++) {
      const inserted = await this.insertUntilAnswered(pending);
      if (inserted) return { won: true, claim: inserted };
      // A separate statement, not a CTE: only a new snapshot sees a row a concurrent caller just committed.
      const existing = await get(request.key);
      if (existing?.token === pending.token && existing.state === 'claimed') {
        // Inserted by a try whose answer was lost. Confirmed in a durable commit: that try's commit may
        // have been cut short waiting for a synchronous standby, and a claim must be durable before the call.
        const reclaimed = await this.reclaim(existing, leaseMs);
        if (reclaimed) return { won: true, claim: reclaimed };
        continue; // taken over, resolved or released meanwhile: read again
      }
      if (existing) return { won: false, claim: existing };
    }
    throw new ClaimContendedError(request.key, BEGIN_ATTEMPTS);
  }

  /**
   * Inserts the claim, or finds the key taken (null). An error that rolled the first try back is the
   * answer (nothing was claimed); once a try's answer was lost, only a later answer tells whether it
   * committed, so the same claim is tried again, for as long as its lease would last.
   */
  private insertUntilAnswered(pending: PendingClaim): Promise<Claim | null> {
    let answerLost = false;
    return retryFor(pending.leaseMs, () => this.claims.submit(pending), {
      retryable: (error) => {
        if (!rolledBack(error)) answerLost = true;
        return answerLost;
      },
    });
  }

  /**
   * The claim a lost answer left under the caller's token, its lease renewed; null if it is no longer
   * `claimed` under that token. Whatever its lease says: whoever acts on a lapsed claim takes it over
   * (a new token) or settles it first, so one still under this token is untouched, and nothing ran under it.
   */
  private async reclaim(claim: Claim, leaseMs: number): Promise<Claim | null> {
    const { rows } = await this.context.query<ClaimRow>('reclaim', this.context.sql.claims.reclaim, [claim.key, claim.token, leaseMs]);
    return rows[0] ? this.context.claimOf(rows[0]) : null;
  }

  /**
   * Inserts the claims in one statement. What it could not insert was claimed already (the caller reads
   * who holds it). Refused by Postgres (an error that rolled it back: nothing was inserted), each is
   * tried alone, so one request's error stays its own.
   */
  private async insertClaims(pending: readonly PendingClaim[]): Promise<Settled<Claim | null>[]> {
    if (pending.length === 1) return [await settle(this.insertClaim(pending[0]!))];
    const signed = pending.map((claim) => ({ ...claim, ...this.signClaim(claim) }));
    const column = <T>(pick: (claim: (typeof signed)[number]) => T) => signed.map(pick);
    let rows: ClaimRow[];
    try {
      ({ rows } = await this.context.query<ClaimRow>('claim_batch', this.context.sql.claims.claimBatch, [
        column(({ request }) => request.key),
        column(({ token }) => token),
        column(({ request }) => request.fingerprint),
        column(({ request }) => request.namespace),
        column(({ request }) => request.activityType),
        column(({ request }) => request.workflowId),
        column(({ request }) => request.runId),
        column(({ request }) => request.activityId),
        column(({ request }) => request.attempt),
        column(({ request }) => request.claimedBy),
        column(({ leaseMs }) => leaseMs),
        column(({ request }) => request.deadlineMs),
        column(({ mac }) => mac),
        column(({ secretId }) => secretId),
        column(({ request }) => (request.arguments ? payloadToJson(request.arguments) : null)),
        column(({ request }) => request.audited ?? false),
      ]));
    } catch (error) {
      if (rolledBack(error)) return Promise.all(pending.map((claim) => settle(this.insertClaim(claim))));
      return pending.map(() => ({ ok: false, error }));
    }
    const byToken = new Map(rows.map((row) => [row.token, row]));
    return Promise.all(signed.map(({ token }) => settle(Promise.resolve().then(() => (byToken.has(token) ? this.context.claimOf(byToken.get(token)!) : null)))));
  }

  private async insertClaim(claim: PendingClaim): Promise<Claim | null> {
    const { request, token, leaseMs } = claim;
    const { mac, secretId } = this.signClaim(claim);
    const { rows } = await this.context.query<ClaimRow>('claim', this.context.sql.claims.claim, [
      request.key,
      token,
      request.fingerprint,
      request.namespace,
      request.activityType,
      request.workflowId,
      request.runId,
      request.activityId,
      request.attempt,
      request.claimedBy,
      leaseMs,
      request.deadlineMs,
      mac,
      secretId,
      request.arguments ? payloadToJson(request.arguments) : null,
      request.audited ?? false,
    ]);
    return rows[0] ? this.context.claimOf(rows[0]) : null;
  }

  /** A new claim, signed as it is inserted. */
  private signClaim({ request, token }: PendingClaim) {
    return this.context.signer.sign({ ...request, state: 'claimed', token, result: null, outcomeNote: null, outcomeDetail: null });
  }
}
