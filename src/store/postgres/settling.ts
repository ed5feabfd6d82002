/**
 * Settling a claim by the token that holds it: its result recorded (records that arrive together go
 * in one statement), released after a definite failure, marked unknown, taken over from a dead owner,
 * or handed back after a question to the vendor was cut short. Each remembers whether a workflow was
 * refused on the key, so the settler can tell it (`waitersToTell`).
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Payload } from '@temporalio/common';
import type { Claim, ClaimRequest, HeldClaim, OutcomeNote, Waiter } from '../claim-store.js';
import type { ClaimRow } from '../claim-row.js';
import { NaturalBatch, settle } from '../natural-batch.js';
import type { Settled } from '../natural-batch.js';
import { payloadToJson } from '../payload-json.js';
import type { PayloadJson } from '../payload-json.js';
import { pgText } from '../pg-text.js';
import type { Batching } from './claiming.js';
import { STATEMENT_TIMEOUT_MS } from './context.js';
import type { StoreContext } from './context.js';
import { rolledBack } from './pg-errors.js';

/** A result to record, signed. */
interface PendingRecord {
  readonly claim: Claim;
  readonly result: PayloadJson;
  readonly mac: string | null;
  readonly secretId: string | null;
}

/** Awaited completions remembered for `waitersToTell` (each is asked for at once, so a few suffice). */
const MAX_AWAITED_COMPLETIONS = 10_000;

export class Settling {
  private readonly records: NaturalBatch<PendingRecord, boolean>;
  /** Tokens of claims settled while someone was flagged as waiting on them (see `waitersToTell`). */
  private readonly awaitedCompletions = new Set<string>();

  constructor(
    private readonly context: StoreContext,
    batching: Batching,
  ) {
    this.records = new NaturalBatch({ ...batching, send: (pending) => this.recordResults(pending) });
  }

  complete(claim: Claim, result: Payload): Promise<boolean> {
    const json = payloadToJson(result);
    // The record drops any note's detail (a taker's question about the call: the statement clears it), as signed here.
    const signature = this.context.signer.sign({ ...claim, state: 'completed', result: json, outcomeNote: claim.outcomeNote, outcomeDetail: null });
    return this.records.submit({ claim, result: json, ...signature });
  }

  release(claim: Claim): Promise<boolean> {
    return this.settle('release', this.context.sql.claims.release, [claim.key, claim.token], { noteAwaited: true });
  }

  markUnknown(claim: Claim, note: OutcomeNote): Promise<boolean> {
    const summary = pgText(note.summary);
    const detail = note.detail ? payloadToJson(note.detail) : null;
    const { mac, secretId } = this.context.signer.sign({ ...claim, state: 'unknown', result: null, outcomeNote: summary, outcomeDetail: detail });
    return this.settle('mark_unknown', this.context.sql.claims.markUnknown, [claim.key, claim.token, summary, mac, secretId, detail]);
  }

  handBack(taken: Claim, orphan: Claim, note: OutcomeNote): Promise<boolean> {
    const summary = pgText(note.summary);
    const detail = note.detail ? payloadToJson(note.detail) : null;
    const { mac, secretId } = this.context.signer.sign({ ...orphan, state: 'unknown', result: null, outcomeNote: summary, outcomeDetail: detail });
    const { token, attempt, claimedBy, claimedAt, leaseExpiresAt, workflowId, runId, activityId, deadlineAt } = orphan;
    const orphanIdentity = [token, attempt, claimedBy, claimedAt, leaseExpiresAt, workflowId, runId, activityId, deadlineAt];
    return this.settle('hand_back', this.context.sql.claims.handBack, [taken.key, taken.token, ...orphanIdentity, summary, detail, mac, secretId]);
  }

  async takeOver(orphan: Claim, request: ClaimRequest, leaseMs: number, note?: OutcomeNote): Promise<Claim | null> {
    const summary = note ? pgText(note.summary) : null;
    const detail = note?.detail ? payloadToJson(note.detail) : null;
    const token = randomUUID();
    const { attempt, claimedBy, workflowId, runId, activityId } = request;
    const taker = { ...orphan, state: 'claimed' as const, token, attempt, claimedBy, workflowId, runId, activityId };
    const { mac, secretId } = this.context.signer.sign({ ...taker, result: null, outcomeNote: summary, outcomeDetail: detail });
    // Bounded: given up, a takeover that commits later leaves the claim an orphan again, as it found it.
    const { rows } = await this.context.pool.query<ClaimRow>({ text: this.context.sql.claims.takeOver, query_timeout: STATEMENT_TIMEOUT_MS, values: [
      orphan.key,
      orphan.token,
      token,
      attempt,
      claimedBy,
      leaseMs,
      workflowId,
      runId,
      activityId,
      request.deadlineMs,
      mac,
      secretId,
      summary,
      detail,
      request.audited ?? false,
    ] } as pg.QueryConfig);
    return rows[0] ? this.context.claimOf(rows[0]) : null;
  }

  /**
   * After `complete` recorded, or `release` deleted, the caller's claim: the workflows refused on its key
   * that were not told since. Only a claim flagged as awaited can have any: no statement for the others.
   */
  async waitersToTell(claim: HeldClaim): Promise<readonly Waiter[]> {
    if (!this.awaitedCompletions.delete(claim.token)) return [];
    const { rows } = await this.context.pool.query<Waiter>({ text: this.context.sql.waiters.toTell, query_timeout: STATEMENT_TIMEOUT_MS, values: [claim.key] } as pg.QueryConfig);
    return rows;
  }

  /** Until its caller asks `waitersToTell`; bounded, so a caller that never asks cannot grow it for ever. */
  noteAwaitedCompletion(token: string): void {
    this.awaitedCompletions.add(token);
    if (this.awaitedCompletions.size > MAX_AWAITED_COMPLETIONS) {
      this.awaitedCompletions.delete(this.awaitedCompletions.values().next().value!);
    }
  }

  /**
   * Records the results in one statement: true for each claim still the caller's. Refused by Postgres,
   * each is recorded alone (one bad row does not fail its neighbours); lost in flight, each caller is
   * told so and tries again, as it would alone.
   */
  private async recordResults(pending: readonly PendingRecord[]): Promise<Settled<boolean>[]> {
    const { sql } = this.context;
    const alone = ({ claim, result, mac, secretId }: PendingRecord) =>
      settle(this.settle('complete', sql.claims.complete, [claim.key, claim.token, result, mac, secretId], { noteAwaited: true }));
    if (pending.length === 1) return [await alone(pending[0]!)];
    // One token twice in a statement: Postgres records one of the two results, unpredictably, and both
    // callers would be told theirs was. The repeats go after the batch, alone, as they would have.
    const tokens = new Set<string>();
    const repeated = pending.map(({ claim }) => tokens.size === tokens.add(claim.token).size);
    if (repeated.includes(true)) {
      const firsts = await this.recordResults(pending.filter((_, index) => !repeated[index]));
      const settled: Settled<boolean>[] = [];
      for (const [index, record] of pending.entries()) settled.push(repeated[index] ? await alone(record) : firsts.shift()!);
      return settled;
    }
    let rows: { token: string; awaited: boolean }[];
    try {
      ({ rows } = await this.context.query<{ token: string; awaited: boolean }>('complete_batch', sql.claims.completeBatch, [
        pending.map(({ claim }) => claim.key),
        pending.map(({ claim }) => claim.token),
        pending.map(({ result }) => result),
        pending.map(({ mac }) => mac),
        pending.map(({ secretId }) => secretId),
      ], STATEMENT_TIMEOUT_MS));
    } catch (error) {
      if (rolledBack(error)) return Promise.all(pending.map(alone));
      // Lost in flight, it may have settled claims someone waits on: `waitersToTell` must look.
      for (const { claim } of pending) this.noteAwaitedCompletion(claim.token);
      return pending.map(() => ({ ok: false, error }));
    }
    const settled = new Set(rows.map((row) => row.token));
    for (const row of rows) if (row.awaited) this.noteAwaitedCompletion(row.token);
    return pending.map(({ claim }) => ({ ok: true, value: settled.has(claim.token) }));
  }

  /**
   * Runs a statement that settles the caller's own claim (`params[1]` its token); with `noteAwaited`,
   * remembers whether a workflow was refused on it, for `waitersToTell`.
   */
  private async settle(name: string, statement: string, params: unknown[], options: { noteAwaited?: boolean } = {}): Promise<boolean> {
    const token = params[1] as string;
    let rows: { awaited: boolean }[];
    try {
      ({ rows } = await this.context.query<{ awaited: boolean }>(name, statement, params, STATEMENT_TIMEOUT_MS));
    } catch (error) {
      // Its answer lost, it may have settled a claim someone waits on: `waitersToTell` must look.
      if (options.noteAwaited) this.noteAwaitedCompletion(token);
      throw error;
    }
    if (options.noteAwaited && rows[0]?.awaited) this.noteAwaitedCompletion(token);
    return rows.length > 0;
  }
}
