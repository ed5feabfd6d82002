/**
 * Claiming a key: a primary-key INSERT, committed durably before the call, so two callers can never
 * both win. Claims that arrive while one is in flight go out together (NaturalBatch). A caller told
 * its claim failed never calls, though its INSERT may have committed as the connection dropped: such
 * a claim is undone by its token (ClaimUndo), or a later attempt would refuse a call that never went out.
 */
import { randomUUID } from 'node:crypto';
import type { BeginResult, Claim, ClaimRequest, HeldClaim } from '../claim-store.js';
import type { ClaimRow } from '../claim-row.js';
import { ClaimContendedError } from '../claim-contended.js';
import { ClaimUndo } from '../claim-undo.js';
import { NaturalBatch, settle } from '../natural-batch.js';
import type { Settled } from '../natural-batch.js';
import { payloadToJson } from '../payload-json.js';
import type { StoreContext } from './context.js';
import { rolledBack } from './pg-errors.js';

/** A claim to insert, with its lease. */
interface PendingClaim {
  readonly request: ClaimRequest;
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
  private readonly undo: ClaimUndo;

  constructor(
    private readonly context: StoreContext,
    batching: Batching,
    /** Told of an undone claim someone was refused (or waited) on: nothing ran under it, and they must hear so. */
    onGhostUndone: (ghost: HeldClaim) => void,
  ) {
    this.claims = new NaturalBatch({ ...batching, send: (pending) => this.insertClaims(pending) });
    this.undo = new ClaimUndo(async (keys, tokens) => {
      const { rows } = await context.pool.query<{ token: string; key: string; awaited: boolean }>(context.sql.claims.undoClaims, [keys, tokens]);
      for (const row of rows) if (row.awaited) onGhostUndone({ key: row.key, token: row.token });
      return rows.map((row) => row.token);
    }, context.logger);
  }

  /** `get` reads a key's claim as it is now (a fresh statement, so a fresh snapshot). */
  async begin(request: ClaimRequest, leaseMs: number, get: (key: string) => Promise<Claim | null>): Promise<BeginResult> {
    // In a refused call's place, the refused call's record decides: it is looked up first, never claimed under.
    const refused = request.refusedKey === undefined || request.refusedKey === request.key ? null : await get(request.refusedKey);
    if (refused) return { won: false, claim: refused };
    // A claim can be released between our failed insert and our read; then we simply try again.
    for (let attempt = 1; attempt <= BEGIN_ATTEMPTS; attempt++) {
      const inserted = await this.claims.submit({ request, leaseMs });
      if (inserted) return { won: true, claim: inserted };
      // A separate statement, not a CTE: only a new snapshot sees a row a concurrent caller just committed.
      const existing = await get(request.key);
      // A claim of this store's whose caller was told it failed (its insert's answer was lost): nothing ran
      // under it. Undo it now and claim again, rather than let this retry wait out its lease and refuse.
      if (existing && this.undo.isGhost(existing.token)) {
        // Undone now, or by a background pass since it was read: either way, read and claim again.
        await this.undo.undoNow(existing.token);
        continue;
      }
      if (existing) return { won: false, claim: existing };
    }
    throw new ClaimContendedError(request.key, BEGIN_ATTEMPTS);
  }

  /**
   * Claims whose insert was cut in flight are still looked for, through the pool, until their time is
   * up (twice the lease), and undone if they committed.
   */
  stop(): Promise<void> {
    return this.undo.stop();
  }

  /**
   * Inserts the claims in one statement. What it could not insert was claimed already (the caller reads
   * who holds it). Refused by Postgres (an error that rolled it back: nothing was inserted), each is
   * tried alone, so one request's error stays its own; lost in flight, it may have committed, so each
   * claim is undone by its token, as one alone would be.
   */
  private async insertClaims(pending: readonly PendingClaim[]): Promise<Settled<Claim | null>[]> {
    if (pending.length === 1) return [await settle(this.insertOrUndo(pending[0]!.request, pending[0]!.leaseMs))];
    const signed = pending.map(({ request, leaseMs }) => {
      const token = randomUUID();
      return { request, leaseMs, token, ...this.signClaim(request, token) };
    });
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
      if (rolledBack(error)) return Promise.all(pending.map(({ request, leaseMs }) => settle(this.insertOrUndo(request, leaseMs))));
      for (const { request, token, leaseMs } of signed) this.undo.add(request.key, token, leaseMs * 2);
      return pending.map(() => ({ ok: false, error }));
    }
    const byToken = new Map(rows.map((row) => [row.token, row]));
    return Promise.all(
      signed.map(async ({ request, token, leaseMs }) => {
        const row = byToken.get(token);
        const read = await settle(Promise.resolve().then(() => (row ? this.context.claimOf(row) : null)));
        // Inserted, but its caller is told it failed (it will not call): the claim goes, as one alone would.
        if (!read.ok) this.undo.add(request.key, token, leaseMs * 2);
        return read;
      }),
    );
  }

  /** The caller is told the claim failed, so it will not call; but the INSERT may have committed: undo it by token. */
  private async insertOrUndo(request: ClaimRequest, leaseMs: number): Promise<Claim | null> {
    const token = randomUUID();
    try {
      return await this.insertClaim(request, token, leaseMs);
    } catch (error) {
      this.undo.add(request.key, token, leaseMs * 2);
      throw error;
    }
  }

  private async insertClaim(request: ClaimRequest, token: string, leaseMs: number): Promise<Claim | null> {
    const { mac, secretId } = this.signClaim(request, token);
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
  private signClaim(request: ClaimRequest, token: string) {
    return this.context.signer.sign({ ...request, state: 'claimed', token, result: null, outcomeNote: null, outcomeDetail: null });
  }
}
