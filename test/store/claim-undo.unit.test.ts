/**
 * Undoing claims whose callers were told they failed: looked for again every
 * second until deleted or out of time, all of them in one statement, and a
 * warning only when the database could not be asked at the end.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ClaimUndo } from '../../src/store/claim-undo.js';

/** A claims table the undo deletes from; a claim may appear late (a cut backend committing after its client went). */
function table() {
  const rows = new Set<string>();
  const statements: string[][] = [];
  let down = false;
  return {
    rows,
    statements,
    setDown: (value: boolean) => void (down = value),
    undo: async (_keys: readonly string[], tokens: readonly string[]) => {
      statements.push([...tokens]);
      if (down) throw new Error('connect ECONNREFUSED');
      const deleted = tokens.filter((token) => rows.delete(token));
      return deleted;
    },
  };
}

const warnings: string[] = [];
const logger = { warn: (message: string) => void warnings.push(message), error: () => undefined };

beforeEach(() => {
  vi.useFakeTimers();
  warnings.length = 0;
});
afterEach(() => vi.useRealTimers());

describe('ClaimUndo', () => {
  it('finds a claim that commits after the first look, and then stops looking', async () => {
    const claims = table();
    const undo = new ClaimUndo(claims.undo, logger);
    undo.add('k1', 't1', 60_000);
    await vi.advanceTimersByTimeAsync(0);
    expect(claims.statements).toEqual([['t1']]);
    claims.rows.add('t1'); // the cut backend commits now
    await vi.advanceTimersByTimeAsync(1_000);
    expect(claims.rows.has('t1')).toBe(false);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(claims.statements).toHaveLength(2);
    expect(warnings).toEqual([]);
  });

  it('sends the claims of one lost batch in one statement', async () => {
    const claims = table();
    const undo = new ClaimUndo(claims.undo, logger);
    for (const token of ['t1', 't2', 't3']) undo.add(`key-${token}`, token, 60_000);
    await vi.advanceTimersByTimeAsync(0);
    expect(claims.statements).toEqual([['t1', 't2', 't3']]);
  });

  it('gives up quietly on a claim never found in its time: it never committed', async () => {
    const claims = table();
    const undo = new ClaimUndo(claims.undo, logger);
    undo.add('k1', 't1', 3_000);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(claims.statements.length).toBeGreaterThanOrEqual(3);
    expect(claims.statements.length).toBeLessThanOrEqual(4);
    expect(warnings).toEqual([]);
  });

  it('keeps trying while the database is down, and warns when its time is up with the database still unreachable', async () => {
    const claims = table();
    claims.setDown(true);
    const undo = new ClaimUndo(claims.undo, logger);
    undo.add('k1', 't1', 3_000);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(warnings).toEqual([expect.stringMatching(/could not undo a claim/)]);
  });

  it('undoes a pending claim at once when a retry finds it, and knows its ghosts, pending or lately undone', async () => {
    const claims = table();
    claims.setDown(true);
    const undo = new ClaimUndo(claims.undo, logger);
    undo.add('k1', 't1', 60_000);
    await vi.advanceTimersByTimeAsync(0); // the first look fails: Postgres is restarting
    claims.rows.add('t1'); // the insert had committed after all
    claims.setDown(false);
    expect(undo.isGhost('t1')).toBe(true);
    expect(undo.isGhost('t-other')).toBe(false);
    expect(await undo.undoNow('t1')).toBe(true);
    expect(claims.rows.has('t1')).toBe(false);
    // Still known as a ghost once gone: a retry may have read it just before it went.
    expect(undo.isGhost('t1')).toBe(true);
    expect(await undo.undoNow('t1')).toBe(false); // no longer pending: nothing to undo
    await undo.stop();
  });

  it('rejects an undo asked for at once while Postgres is down, and keeps looking', async () => {
    const claims = table();
    claims.setDown(true);
    const undo = new ClaimUndo(claims.undo, logger);
    undo.add('k1', 't1', 60_000);
    await expect(undo.undoNow('t1')).rejects.toThrow(/ECONNREFUSED/);
    expect(undo.isGhost('t1')).toBe(true);
    claims.rows.add('t1');
    claims.setDown(false);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(claims.rows.has('t1')).toBe(false);
    await undo.stop();
  });

  it('keeps looking after stop() for a claim still pending, until its time is up: another worker may still use the store', async () => {
    const claims = table();
    const undo = new ClaimUndo(claims.undo, logger);
    undo.add('k1', 't1', 10_000);
    await vi.advanceTimersByTimeAsync(0);
    await undo.stop(); // one worker of two stops; the cut backend has not committed yet
    claims.rows.add('t1'); // now it does
    await vi.advanceTimersByTimeAsync(1_000);
    expect(claims.rows.has('t1'), 'the ghost is undone after the stop').toBe(false);
    const looks = claims.statements.length;
    await vi.advanceTimersByTimeAsync(20_000);
    expect(claims.statements).toHaveLength(looks); // found and undone: no more looking
  });
});
